package session

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

// listener turns a call's binary caller audio into speech turns with a
// voice activity detector: speech that starts while a reply is being spoken
// is a barge-in, and speech that ends becomes a turn for the recognition
// stage, born when the caller stopped speaking. It runs in the call's reader.
type listener struct {
	format media.Format
	det    *vad.Detector
	recent []int16 // the last preRoll of audio, while silent
	utter  []int16 // the utterance so far, while speaking
	in     bool
}

func newListener(f media.Format) (*listener, error) {
	if f.SampleRate == 0 {
		f.SampleRate = 16000
	}
	det, err := vad.New(vad.Config{SampleRate: f.SampleRate})
	if err != nil {
		return nil, err
	}
	return &listener{format: f, det: det}, nil
}

func (l *listener) decode(b []byte) ([]int16, error) {
	switch l.format.Encoding {
	case media.Mulaw:
		return g711.DecodeMulaw(nil, b), nil
	case media.Alaw:
		return g711.DecodeAlaw(nil, b), nil
	}
	return pcm.Decode(nil, b)
}

func (l *listener) samples(d time.Duration) int {
	return int(int64(l.format.SampleRate) * int64(d) / int64(time.Second))
}

// feed consumes caller audio. start reports speech beginning; utterances
// are the speech turns that ended, each with how long ago it ended.
func (l *listener) feed(b []byte) (start bool, utterances []backend.Audio, ago []time.Duration, err error) {
	s, err := l.decode(b)
	if err != nil {
		return false, nil, nil, err
	}
	evs := l.det.Process(nil, s)
	if l.in {
		l.utter = append(l.utter, s...)
	}
	l.recent = append(l.recent, s...)
	if n := l.samples(preRoll); len(l.recent) > n {
		l.recent = append(l.recent[:0], l.recent[len(l.recent)-n:]...)
	}
	now := l.det.Position()
	for _, ev := range evs {
		switch ev.Kind {
		case vad.SpeechStart:
			start, l.in = true, true
			n := min(l.samples(now-ev.At), len(l.recent))
			l.utter = append(l.utter[:0], l.recent[len(l.recent)-n:]...)
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
