package sip

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
)

// TestConcurrentCalls places 20 calls at once through Dial, each with 1 s
// of audio each way, and checks every call got all of the other side's
// audio. It logs call setup times and the server's pacing lateness: the
// figures a load run with -protocol sip would report.
func TestConcurrentCalls(t *testing.T) {
	const calls = 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var late []time.Duration
	// Every call comes from 127.0.0.1 at once: more INVITEs of one address
	// in flight than the default bound (16) lets a source leave unacknowledged.
	s := listen(t, Config{MaxPendingPerAddr: calls, Handler: HandlerFunc(func(ctx context.Context, c *Call) {
		m, err := c.Answer(ctx)
		if err != nil {
			return
		}
		_ = m.WritePCM(constant(3000, time.Second))
		got := 0
		for f := range m.Frames() {
			if siptest.RMS(f.PCM) > 1000 {
				got++
			}
			if got == 50 {
				break
			}
		}
		_ = m.Drain(ctx)
		st := m.Stats()
		mu.Lock()
		late = append(late, st.Pace.P99)
		mu.Unlock()
		_ = c.Hangup(ctx)
	})})
	setup := make([]time.Duration, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			out, err := Dial(ctx, fmt.Sprintf("sip:acme@%s", s.Addr()), DialConfig{From: fmt.Sprint("load", i)})
			if err != nil {
				errs[i] = err
				return
			}
			defer out.Close()
			setup[i] = time.Since(start)
			if err := out.WritePCM(constant(3000, time.Second)); err != nil {
				errs[i] = err
				return
			}
			got := 0
			for f := range out.Frames() {
				if siptest.RMS(f.PCM) > 1000 {
					got++
				}
			}
			if got != 50 {
				errs[i] = fmt.Errorf("call %d heard %d of 50 frames", i, got)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s.Close() // waits for the handlers
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(setup)
	slices.Sort(late)
	if len(late) > 0 {
		t.Logf("%d calls: setup p50 %v max %v; per-call pacing lateness p99: median %v worst %v",
			calls, setup[calls/2], setup[calls-1], late[len(late)/2], late[len(late)-1])
	}
}
