// Package pocketsphinx is a backend.Recognizer that runs Debian's
// pocketsphinx_continuous (CMU PocketSphinx, package pocketsphinx) with the
// en-us acoustic model (package pocketsphinx-en-us) as a subprocess, once per
// utterance: the speech, resampled to 16 kHz, goes in on standard input as
// raw PCM16 and the transcript comes out on standard output. Nothing is
// downloaded at run time.
//
// Its default language model is learned at start from a small built-in
// corpus of what a front desk's callers say and what frontdoor says to them
// (corpus.txt, extended by Options.Corpus): inside that vocabulary it hears
// synthetic and clear speech well; outside it, it cannot hear the words at
// all. The general en-us model (Options.LM = LMGeneral) hears any English,
// far less accurately. For real callers point frontdoor at a better
// recognizer (any OpenAI-compatible transcription server).
//
// Cancellation kills the decoder's process group, and Recognize returns only
// after the process has been waited for: that return is the cleanup evidence
// the recognize stage's lease waits for.
package pocketsphinx
