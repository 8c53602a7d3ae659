package listen

import (
	"slices"
	"testing"

	"github.com/frontdoorhq/frontdoor/media"
)

// TestListenerRing checks the pre-roll ring against the window it
// replaces (the last preRoll of everything fed, shifted per frame): after
// each frame of any size, the newest k samples are the same, for every k.
func TestListenerRing(t *testing.T) {
	l := &Listener{format: media.Format{SampleRate: 8000}}
	n := l.samples(preRoll)
	var all []int16
	next := int16(0)
	for i, size := range []int{160, 160, 7, 2400, 1, 160, 2399, 2400, 2401, 5000, 160, 3, 160} {
		s := make([]int16, size)
		for j := range s {
			next++
			s[j] = next
		}
		l.remember(s)
		all = append(all, s...)
		window := all[max(0, len(all)-n):]
		for _, k := range []int{0, 1, 159, 160, 161, n - 1, n, n + 1} {
			want := window[max(0, len(window)-k):]
			if got := l.last(nil, k); !slices.Equal(got, want) {
				t.Fatalf("frame %d (size %d), last %d: got %d samples %v..., want %d", i, size, k, len(got), got[:min(3, len(got))], len(want))
			}
		}
	}
}
