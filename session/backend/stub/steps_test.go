package stub

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

func TestParseSteps(t *testing.T) {
	got, err := ParseSteps("10,4@10s,15@20s")
	if err != nil || len(got) != 3 || got[1] != (Step{At: 10 * time.Second, N: 4}) || got[2].N != 15 {
		t.Fatalf("ParseSteps = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "4@1s", "4,5", "4,5@2s,6@1s", "4,x@1s"} {
		if _, err := ParseSteps(bad); err == nil {
			t.Errorf("ParseSteps(%q) accepted", bad)
		}
	}
}

// A scheduled model's capacity drops from 4 to 1 at its step, timed from
// its first reply: four jobs of 40 ms started together run at full speed
// until the step (at 20 ms), then at a quarter: each ends at 20 + 4·20 ms.
func TestScheduledModelSteps(t *testing.T) {
	clk := stagestest.NewClock(time.Unix(0, 0))
	m := NewScheduledModel(Settings{ModelDelay: 40 * time.Millisecond, Tokens: 1, Clock: clk}, []Step{{N: 4}, {At: 20 * time.Millisecond, N: 1}}, clk)
	defer m.Close()
	start := clk.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, 4)
	for i := range 4 {
		wg.Go(func() {
			if err := m.Reply(context.Background(), backend.Turn{Text: "hi"}, func(string) error { return nil }); err != nil {
				t.Error(err)
			}
			took[i] = clk.Now().Sub(start)
		})
	}
	c := m.Schedule().Capacity
	settled := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.running == 4 && c.settled == 4
	}
	waitFor(t, settled)
	clk.Advance(20 * time.Millisecond) // the step fires: capacity 1
	waitFor(t, settled)
	clk.Advance(80 * time.Millisecond)
	wg.Wait()
	for i, d := range took {
		if d != 100*time.Millisecond {
			t.Errorf("job %d done after %v, want 100ms", i, d)
		}
	}
}
