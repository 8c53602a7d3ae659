// Package vad detects voice activity from frame energy: speech starts when
// frames stay above a dBFS threshold for a minimum duration and ends after a
// hangover of quieter frames. Times are audio time (position in the stream),
// not wall-clock time, so results are reproducible from recordings.
package vad

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Kind tells speech start from speech end.
type Kind int

// Event kinds.
const (
	SpeechStart Kind = iota + 1
	SpeechEnd
)

func (k Kind) String() string {
	switch k {
	case SpeechStart:
		return "speech_start"
	case SpeechEnd:
		return "speech_end"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is a change of voice activity.
type Event struct {
	Kind Kind
	// At is when the change happened in the audio: the start of the first
	// loud frame for SpeechStart, the end of the last loud frame for SpeechEnd.
	At time.Duration
	// Detected is the audio time at which the detector could tell: At plus
	// MinSpeech or Hangover. A barge-in can act no earlier than this.
	Detected time.Duration
}

// Config tunes a Detector. Zero fields take the defaults noted.
type Config struct {
	SampleRate    int           // required: rate of the PCM fed to Process
	ThresholdDBFS float64       // frame level counted as speech; default -40 dBFS
	MinSpeech     time.Duration // loud run needed to start; default 60 ms
	Hangover      time.Duration // quiet run needed to end; default 500 ms
	Frame         time.Duration // analysis frame; default 20 ms
}

// ErrConfig reports an unusable Config.
var ErrConfig = errors.New("vad: bad config")

// Detector is a streaming energy VAD. It is not safe for concurrent use.
type Detector struct {
	cfg      Config
	frameN   int     // samples per frame
	thresh   float64 // mean square at the threshold
	pending  []int16 // samples of an incomplete frame
	frames   int64   // frames processed
	speaking bool
	loudRun  int   // consecutive loud frames while silent
	quietRun int   // consecutive quiet frames while speaking
	runStart int64 // frame index where the loud run began
	lastLoud int64 // last loud frame index while speaking
	minLoud  int
	minQuiet int
}

// New returns a Detector for cfg.
func New(cfg Config) (*Detector, error) {
	if cfg.SampleRate <= 0 {
		return nil, fmt.Errorf("vad: sample rate %d: %w", cfg.SampleRate, ErrConfig)
	}
	if cfg.ThresholdDBFS == 0 {
		cfg.ThresholdDBFS = -40
	}
	if cfg.ThresholdDBFS > 0 {
		return nil, fmt.Errorf("vad: threshold %v dBFS above full scale: %w", cfg.ThresholdDBFS, ErrConfig)
	}
	if cfg.MinSpeech <= 0 {
		cfg.MinSpeech = 60 * time.Millisecond
	}
	if cfg.Hangover <= 0 {
		cfg.Hangover = 500 * time.Millisecond
	}
	if cfg.Frame <= 0 {
		cfg.Frame = 20 * time.Millisecond
	}
	d := &Detector{cfg: cfg}
	d.frameN = int(int64(cfg.SampleRate) * int64(cfg.Frame) / int64(time.Second))
	if d.frameN < 1 {
		return nil, fmt.Errorf("vad: frame %v at %d Hz: %w", cfg.Frame, cfg.SampleRate, ErrConfig)
	}
	// A full-scale sine reads 0 dBFS: mean square 32768²/2.
	d.thresh = math.Pow(10, cfg.ThresholdDBFS/10) * 32768 * 32768 / 2
	d.minLoud = int(math.Ceil(float64(cfg.MinSpeech) / float64(cfg.Frame)))
	d.minQuiet = int(math.Ceil(float64(cfg.Hangover) / float64(cfg.Frame)))
	return d, nil
}

// Speaking reports whether the detector is inside speech.
func (d *Detector) Speaking() bool { return d.speaking }

// Position returns the audio time of the samples consumed so far, in whole frames.
func (d *Detector) Position() time.Duration { return d.at(d.frames) }

// Reset returns the detector to silence at audio time zero.
func (d *Detector) Reset() {
	*d = Detector{cfg: d.cfg, frameN: d.frameN, thresh: d.thresh, minLoud: d.minLoud, minQuiet: d.minQuiet}
}

func (d *Detector) at(frame int64) time.Duration { return time.Duration(frame) * d.cfg.Frame }

// Process consumes mono PCM of any length (partial frames are carried over)
// and appends the events it caused to evs.
func (d *Detector) Process(evs []Event, pcm []int16) []Event {
	if len(d.pending) > 0 {
		need := d.frameN - len(d.pending)
		if len(pcm) < need {
			d.pending = append(d.pending, pcm...)
			return evs
		}
		d.pending = append(d.pending, pcm[:need]...)
		pcm = pcm[need:]
		evs = d.frame(evs, d.pending)
		d.pending = d.pending[:0]
	}
	for len(pcm) >= d.frameN {
		evs = d.frame(evs, pcm[:d.frameN])
		pcm = pcm[d.frameN:]
	}
	if len(pcm) > 0 {
		d.pending = append(d.pending, pcm...)
	}
	return evs
}

// sumSquares is the sum of the samples' squares. In integers it is
// exact, as the float64 sum it replaces was (each square is at most 2^30,
// a frame's sum far under 2^53), and four sums side by side do not wait
// for one another: a caller frame's VAD costs a quarter of what it did.
func sumSquares(f []int16) int64 {
	var a, b, c, e int64
	for len(f) >= 4 {
		x0, x1, x2, x3 := int64(f[0]), int64(f[1]), int64(f[2]), int64(f[3])
		a += x0 * x0
		b += x1 * x1
		c += x2 * x2
		e += x3 * x3
		f = f[4:]
	}
	for _, s := range f {
		x := int64(s)
		a += x * x
	}
	return a + b + c + e
}

func (d *Detector) frame(evs []Event, f []int16) []Event {
	loud := float64(sumSquares(f))/float64(len(f)) >= d.thresh
	i := d.frames
	d.frames++
	if !d.speaking {
		if !loud {
			d.loudRun = 0
			return evs
		}
		if d.loudRun == 0 {
			d.runStart = i
		}
		d.loudRun++
		if d.loudRun >= d.minLoud {
			d.speaking, d.quietRun, d.lastLoud = true, 0, i
			evs = append(evs, Event{Kind: SpeechStart, At: d.at(d.runStart), Detected: d.at(d.frames)})
		}
		return evs
	}
	if loud {
		d.quietRun, d.lastLoud = 0, i
		return evs
	}
	d.quietRun++
	if d.quietRun >= d.minQuiet {
		d.speaking, d.loudRun = false, 0
		evs = append(evs, Event{Kind: SpeechEnd, At: d.at(d.lastLoud + 1), Detected: d.at(d.frames)})
	}
	return evs
}
