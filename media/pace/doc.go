// Package pace releases outbound audio in real time: fixed-size frames (20 ms
// by default) on a clock aligned to when playback started, so a barge-in can
// still stop everything that has not been sent, and a transport never dumps a
// whole utterance in one burst. It measures how late each frame left.
package pace
