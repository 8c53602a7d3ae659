// Package backends builds the model, synthesizer and recognizer that
// frontdoor serve uses, from command-line settings: -model (stub|openai),
// -synth (auto|stub|espeak|openai) and -recognize (stub|openai), with the
// adapters' URLs, names and the stub's timing. It lives with the binary
// because it knows the command line, and it is a package of its own so that
// package session/backend, which every adapter imports, imports none of
// them.
//
// The default synthesizer is espeak-ng when it is installed, so a fresh
// frontdoor serve speaks with a real voice; otherwise the stub, and New says
// so in Set.Notes.
package backends
