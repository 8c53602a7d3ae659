package sessiontest

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/wav"
)

// WaitFor polls cond every 2 ms until it holds, failing the test after
// 5 s: for what the tests see only from outside (a metric, a count of
// calls), which nothing signals.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Speech reads the espeak-ng fixture name from media/testdata at rate.
// The folder is found from this file's own path, so that a test of any
// package finds it whatever its directory.
func Speech(t testing.TB, name string, rate int) []int16 {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("sessiontest: no source path for media/testdata")
	}
	a, err := wav.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "media", "testdata", name))
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
