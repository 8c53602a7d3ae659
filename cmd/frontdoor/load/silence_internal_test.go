package load

import (
	"testing"
	"time"
)

// TestReplySilence: the caller plays a reply from its first frame; a
// frame that comes after the audio before it has played leaves a silence,
// one that comes early (paced ahead, or a burst) leaves none.
func TestReplySilence(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name   string
		frames []int // arrival, ms after the first; each 20 ms of audio
		want   time.Duration
	}{
		{"paced", []int{0, 20, 40, 60}, 0},
		{"burst, then on time", []int{0, 0, 0, 60, 80}, 0},
		{"late by 5 ms", []int{0, 25}, ms(5)},
		{"a gap between sentences", []int{0, 20, 40, 300, 320}, ms(240)},
		{"the longest of two", []int{0, 100, 120, 400}, ms(260)},
	}
	for _, tt := range tests {
		var r turnRec
		for _, at := range tt.frames {
			r.played(t0.Add(ms(at)), ms(20))
		}
		if r.silence != tt.want {
			t.Errorf("%s: silence %v, want %v", tt.name, r.silence, tt.want)
		}
	}
}

func TestEndsSentence(t *testing.T) {
	for delta, want := range map[string]bool{
		" hours.": true, " Really?": true, " yes!\"": true, " so,": false, " 9": false, "": false, " end. ": true,
	} {
		if got := endsSentence(delta); got != want {
			t.Errorf("endsSentence(%q) = %v, want %v", delta, got, want)
		}
	}
}
