// Package pcm converts 16-bit linear PCM to and from little-endian bytes and
// resamples it between rates (8, 16, 24, 48 kHz and arbitrary rates such as
// espeak-ng's 22050 Hz) with a streaming windowed-sinc polyphase low-pass.
package pcm
