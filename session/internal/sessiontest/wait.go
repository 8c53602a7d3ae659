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
// waitLimit: for what the tests see only from outside (a metric, a count
// of calls), which nothing signals.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitLimit bounds a wait that should end at once: not a measure but a
// guard against a test that hangs. 5 s was too short on a loaded machine
// (the whole suite with tests in parallel, beside other work): a SIP
// call's second turn took longer to end it (TestTenantCapsSIP).
const waitLimit = 15 * time.Second

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
