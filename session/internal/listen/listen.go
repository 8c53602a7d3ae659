// Package listen turns a call's binary caller audio into utterances with a
// voice activity detector (the engine's ears): it runs in the call's reader.
package listen

import (
	"time"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/vad"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Bounds on caller audio.
const (
	MaxUtterance = 30 * time.Second       // longer speech is cut into turns
	preRoll      = 300 * time.Millisecond // kept before speech starts
)

// Listener turns a call's binary caller audio into speech turns with a
// voice activity detector: speech that starts while a reply is being spoken
// is a barge-in, and speech that ends becomes a turn for the recognition
// stage, born when the caller stopped speaking. It runs in the call's reader.
type Listener struct {
	format media.Format
	det    vad.Detector // (a value: one allocation less to reach on each frame)
	recent []int16      // the last preRoll of audio, a ring once full (remember)
	rpos   int          // the oldest sample of recent once it is full
	utter  []int16      // the utterance so far, while speaking
	in     bool
	dec    []int16 // decode's, reused from frame to frame
}

func New(f media.Format) (*Listener, error) {
	if f.SampleRate == 0 {
		f.SampleRate = 16000
	}
	det, err := vad.New(vad.Config{SampleRate: f.SampleRate})
	if err != nil {
		return nil, err
	}
	return &Listener{format: f, det: *det}, nil
}

// decode decodes a frame into the listener's reused buffer: the samples
// are valid until the next frame (Feed copies what it keeps).
func (l *Listener) decode(b []byte) ([]int16, error) {
	var err error
	switch l.format.Encoding {
	case media.Mulaw:
		l.dec = g711.DecodeMulaw(l.dec[:0], b)
	case media.Alaw:
		l.dec = g711.DecodeAlaw(l.dec[:0], b)
	default:
		l.dec, err = pcm.Decode(l.dec[:0], b)
	}
	if cap(l.dec) > maxKeptDecode {
		s := l.dec
		l.dec = nil // a large frame does not keep its buffer
		return s, err
	}
	return l.dec, err
}

// maxKeptDecode bounds the decode buffer a listener keeps (samples): a
// 20 ms frame at 48 kHz is 960.
const maxKeptDecode = 2048

// remember keeps s as the newest audio of the last preRoll: recent fills
// up to preRoll, then is a ring whose oldest sample is at rpos, so that a
// frame costs a copy of itself, not a shift of the whole window.
func (l *Listener) remember(s []int16) {
	n := l.samples(preRoll)
	if len(l.recent) > n { // (the format changed)
		l.recent, l.rpos = l.recent[:0], 0
	}
	if len(l.recent) < n {
		k := min(len(s), n-len(l.recent))
		l.recent = append(l.recent, s[:k]...)
		s = s[k:]
	}
	if len(s) == 0 {
		return
	}
	if len(s) >= n {
		copy(l.recent, s[len(s)-n:])
		l.rpos = 0
		return
	}
	k := copy(l.recent[l.rpos:], s)
	copy(l.recent, s[k:])
	l.rpos = (l.rpos + len(s)) % n
}

// last appends the newest k samples remembered to dst, oldest first.
func (l *Listener) last(dst []int16, k int) []int16 {
	a, b := l.recent[l.rpos:], l.recent[:l.rpos] // oldest to newest: a, then b
	k = min(k, len(a)+len(b))
	skip := len(a) + len(b) - k
	if skip >= len(a) {
		return append(dst, b[skip-len(a):]...)
	}
	dst = append(dst, a[skip:]...)
	return append(dst, b...)
}

func (l *Listener) samples(d time.Duration) int {
	return int(int64(l.format.SampleRate) * int64(d) / int64(time.Second))
}

// Feed consumes caller audio. start reports speech beginning; utterances
// are the speech turns that ended, each with how long ago it ended.
func (l *Listener) Feed(b []byte) (start bool, utterances []backend.Audio, ago []time.Duration, err error) {
	s, err := l.decode(b)
	if err != nil {
		return false, nil, nil, err
	}
	evs := l.det.Process(nil, s)
	if l.in {
		l.utter = append(l.utter, s...)
	}
	l.remember(s)
	now := l.det.Position()
	for _, ev := range evs {
		switch ev.Kind {
		case vad.SpeechStart:
			start, l.in = true, true
			l.utter = l.last(l.utter[:0], l.samples(now-ev.At))
		case vad.SpeechEnd:
			l.in = false
			cut := min(l.samples(now-ev.At), len(l.utter))
			utterances = append(utterances, backend.Audio{Rate: l.format.SampleRate, Samples: l.utter[:len(l.utter)-cut]})
			ago = append(ago, now-ev.At)
			l.utter = nil
		}
	}
	if l.in && len(l.utter) >= l.samples(MaxUtterance) {
		utterances = append(utterances, backend.Audio{Rate: l.format.SampleRate, Samples: l.utter})
		ago = append(ago, 0)
		l.utter = nil
	}
	return start, utterances, ago, nil
}
