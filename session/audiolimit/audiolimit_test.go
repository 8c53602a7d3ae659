package audiolimit

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media"
)

// TestAudioRealTime: audio at its real-time rate is never refused; the
// default allowance is four times the declared format's rate.
func TestAudioRealTime(t *testing.T) {
	for _, tc := range []struct {
		f    media.Format
		want int
	}{
		{media.Format{Encoding: media.PCM16, Channels: 1}, 128000},
		{media.Telephony, 32000},
		{media.Format{Encoding: media.PCM16, SampleRate: 48000, Channels: 1}, 384000},
	} {
		f := tc.f
		if got := 4 * realTimeBytes(f); got != tc.want {
			t.Errorf("%v: %d B/s, want %d", f, got, tc.want)
		}
		l := newLimiter(0, 0, DefaultMaxFrame, f)
		now := time.Now()
		per := realTimeBytes(f) / 50 // 20 ms frames
		for i := range 50 * 60 {     // a minute of real time
			if !l.AllowN(now.Add(time.Duration(i)*20*time.Millisecond), per) {
				t.Fatalf("%v: frame %d refused at real time", f, i)
			}
		}
	}
}
