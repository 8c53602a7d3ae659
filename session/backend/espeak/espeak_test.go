package espeak

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

var _ backend.Synthesizer = (*Synthesizer)(nil)

func TestAvailable(t *testing.T) {
	// CI installs espeak-ng (.ci/test); the tests below drive it for real.
	if !Available() {
		t.Fatal("espeak-ng not installed: apt-get install espeak-ng")
	}
}

func newSynth(t *testing.T, o Options) *Synthesizer {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSynthesizeRealSpeech(t *testing.T) {
	s := newSynth(t, Options{Voice: "en-us", Speed: 200})
	var total, chunks int
	var peak int16
	err := s.Synthesize(context.Background(), "Hello, you have reached the front desk.", func(a backend.Audio) error {
		if a.Rate != Rate {
			t.Errorf("rate %d", a.Rate)
		}
		chunks++
		total += len(a.Samples)
		for _, v := range a.Samples {
			peak = max(peak, v, -v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := backend.Audio{Rate: Rate, Samples: make([]int16, total)}.Duration()
	t.Logf("%d chunks, %v of audio, peak %d", chunks, d, peak)
	if d < time.Second || d > 10*time.Second || peak < 3000 || chunks < 2 {
		t.Fatalf("implausible speech: %v, peak %d, %d chunks", d, peak, chunks)
	}
}

// TestKillMidSentence cancels after the first chunk of a long text: the
// process is killed, Synthesize returns context.Canceled only after it was
// waited for (no zombie, nothing left in its process group).
func TestKillMidSentence(t *testing.T) {
	s := newSynth(t, Options{ChunkBytes: 512})
	var pid int
	s.started = func(p int) { pid = p }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	text := strings.Repeat("This sentence goes on and on so that it is still being spoken when the caller barges in. ", 40)
	chunks := 0
	start := time.Now()
	var canceledAt time.Time
	err := s.Synthesize(ctx, text, func(backend.Audio) error {
		chunks++
		if chunks == 1 {
			canceledAt = time.Now()
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	t.Logf("first chunk after %v, returned %v after cancel, %d chunks", canceledAt.Sub(start), time.Since(canceledAt), chunks)
	if chunks != 1 {
		t.Fatalf("%d chunks emitted after cancel", chunks-1)
	}
	if time.Since(canceledAt) > 2*time.Second {
		t.Fatal("did not return promptly after cancel") // liveness bound, not a performance figure
	}
	assertGone(t, pid)
}

func TestEmitErrorKills(t *testing.T) {
	s := newSynth(t, Options{})
	var pid int
	s.started = func(p int) { pid = p }
	stale := errors.New("stale generation")
	err := s.Synthesize(context.Background(), strings.Repeat("Stop me now please. ", 50), func(backend.Audio) error { return stale })
	if !errors.Is(err, stale) || backend.KindOf(err) != backend.KindEmit {
		t.Fatalf("err %v", err)
	}
	assertGone(t, pid)
}

// TestProcessGroupKilled: the fake engine leaves a child holding stdout
// open; only killing the group lets Synthesize return promptly.
func TestProcessGroupKilled(t *testing.T) {
	s := newSynth(t, Options{Path: testdataPath(t, "hang.sh")})
	var pid int
	s.started = func(p int) { pid = p }
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan backend.Audio, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-got:
		case <-time.After(2 * time.Second):
			t.Error("no audio from fake engine")
		}
		cancel()
	})
	start := time.Now()
	err := s.Synthesize(ctx, "x", func(a backend.Audio) error {
		if len(a.Samples) != 2 || a.Samples[0] != 0x0201 {
			t.Errorf("samples %x", a.Samples)
		}
		got <- a
		return nil
	})
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > time.Second { // WaitDelay is 2 s
		t.Fatalf("took %v: process group not killed", d)
	}
	assertGone(t, pid)
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		want error
	}{
		{"missing executable", "/nonexistent/espeak-ng", backend.ErrUnavailable},
		{"not a wav", "garbage.sh", backend.ErrMalformed},
		{"exit status", "fail.sh", backend.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path
			if !filepath.IsAbs(p) {
				p = testdataPath(t, p)
			}
			s := newSynth(t, Options{Path: p})
			err := s.Synthesize(context.Background(), "hello", func(backend.Audio) error { return nil })
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestNoOptionInjection: text that looks like options is spoken, not obeyed.
func TestNoOptionInjection(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.wav")
	s := newSynth(t, Options{})
	n := 0
	err := s.Synthesize(context.Background(), "-w "+out+" --help\x00\x1b[2J", func(a backend.Audio) error {
		n += len(a.Samples)
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("err %v, %d samples", err, n)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("text was taken as an option")
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{Voice: "-w/tmp/x"}, {Voice: "en us"}, {Voice: "../../etc"}, {Speed: 10}, {Speed: 1000}} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	for _, o := range []Options{{Voice: "en-us"}, {Voice: "en+f3"}, {Voice: "mb/mb-en1"}, {Speed: 175}} {
		if _, err := New(o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	s := newSynth(t, Options{MaxText: 10})
	err := s.Synthesize(context.Background(), strings.Repeat("x", 11), func(backend.Audio) error { return nil })
	if !errors.Is(err, backend.ErrRejected) {
		t.Fatalf("long text: %v", err)
	}
	if err := s.Synthesize(context.Background(), " \n ", nil); err != nil {
		t.Fatalf("blank text: %v", err)
	}
}

func testdataPath(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// assertGone checks that pid was reaped, and that its process group empties
// (a killed grandchild is reaped by init, a moment later, not by us).
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if pid == 0 {
		t.Fatal("no pid recorded")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d still exists (zombie or running): %v", pid, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for livingInGroup(pid) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d not empty", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// livingInGroup counts the processes of group pgid that have not exited.
// A killed grandchild is reparented to PID 1, which in a container may reap
// it late or never; such a zombie uses nothing, so it does not count.
func livingInGroup(pgid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	n := 0
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces, so split after ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) >= 3 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			n++
		}
	}
	return n
}

// TestProbe: espeak-ng runs; a missing binary is reported.
func TestProbe(t *testing.T) {
	var _ backend.Prober = (*Synthesizer)(nil)
	if err := newSynth(t, Options{}).Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := newSynth(t, Options{Path: filepath.Join(t.TempDir(), "espeak-ng")}).Probe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "--version") {
		t.Fatalf("missing binary: %v", err)
	}
}
