package trace

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// BenchmarkCycleTraced is stages' BenchmarkCycle recorded by a real Writer
// (to io.Discard): the recording cost on the admission path, the copy into
// the bounded buffer, with the writer's goroutine encoding beside it.
func BenchmarkCycleTraced(b *testing.B) {
	w, err := NewWriter(io.Discard, WriterOptions{MaxBytes: 1 << 62})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	l := stages.Limits{Slots: 1, Waiting: 64, MaxAge: time.Hour, Tombstones: 1024}
	c, err := admit.New(l, w.Stage("model", l, admit.Frontdoor, true))
	if err != nil {
		b.Fatal(err)
	}
	c.Rotate("call", 1, time.Now())
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = fmt.Sprint("turn-", i)
	}
	born := time.Now()
	now := born.Add(time.Second)
	job := stages.Job{Owner: "call", Generation: 1, Born: born}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		job.ID = ids[i%len(ids)]
		if d, err := c.Offer(job, now); d != stages.Queued {
			b.Fatal(d, err)
		}
		if d, id, _ := c.Take(now); d != stages.Admitted || id != job.ID {
			b.Fatal(d)
		}
		if d, _ := c.Release(job.ID); d != stages.Completed {
			b.Fatal(d)
		}
	}
	b.StopTimer()
	s := w.Stats()
	b.ReportMetric(float64(s.Dropped)/float64(s.Dropped+s.Recorded+1), "dropped-fraction")
}
