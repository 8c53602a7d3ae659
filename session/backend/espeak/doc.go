// Package espeak is a backend.Synthesizer that runs espeak-ng as a
// subprocess: the text goes in on standard input (so no text can be read as
// an option), and the WAV that espeak-ng writes to standard output is parsed
// and streamed out as PCM16 chunks while it is produced, at espeak-ng's native
// 22050 Hz.
//
// Cancellation kills the process's whole process group, and Synthesize
// returns only after the process has been waited for: that return is the
// cleanup evidence a stage lease waits for, and no zombie is left behind.
package espeak
