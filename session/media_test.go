package session

import (
	"testing"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/wav"
)

// speech reads an espeak-ng fixture from media/testdata at rate.
func speech(t testing.TB, name string, rate int) []int16 {
	t.Helper()
	a, err := wav.ReadFile("../media/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if a.SampleRate == rate {
		return a.Samples
	}
	s, err := pcm.Resample(a.Samples, a.SampleRate, rate)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
