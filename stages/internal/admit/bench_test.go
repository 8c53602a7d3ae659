package admit

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// benchIDs cycles through more identities than the tombstones retain, so an
// identity is evicted before it is offered again and the benchmark measures
// the controller, not string formatting. n is a power of two, so that the
// loops pick an identity with a mask, not a division (an IDIV per cycle was
// 3% of BenchmarkCycle, a cost the channel semaphore does not pay).
func benchIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint("turn-", i)
	}
	return ids
}

func benchController(b *testing.B, slots int) *Controller {
	c, err := New(Limits{Slots: slots, Waiting: 64, MaxAge: time.Hour, Tombstones: 1024})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCycle is one offer+take+release through the controller.
func BenchmarkCycle(b *testing.B) {
	c := benchController(b, 1)
	c.Rotate("call", 1, t0)
	ids := benchIDs(4096)
	now := t0.Add(time.Second)
	job := Job{Owner: "call", Generation: 1, Born: t0}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		job.ID = ids[i&(len(ids)-1)]
		if d, err := c.Offer(job, now); d != Queued {
			b.Fatal(d, err)
		}
		if d, id, _ := c.Take(now); d != Admitted || id != job.ID {
			b.Fatal(d)
		}
		if d, _ := c.Release(job.ID); d != Completed {
			b.Fatal(d)
		}
	}
}

// benchRecorder keeps the last operations, as a trace writer's bounded
// buffer does, without allocating.
type benchRecorder struct {
	ops [256]Operation
	n   int
}

func (r *benchRecorder) Record(op Operation) { r.ops[r.n%len(r.ops)] = op; r.n++ }

// BenchmarkCycleRecorded is BenchmarkCycle with a Recorder (WithRecorder):
// the cost of recording every operation, not counting the trace's writer.
func BenchmarkCycleRecorded(b *testing.B) {
	c, err := New(Limits{Slots: 1, Waiting: 64, MaxAge: time.Hour, Tombstones: 1024}, WithRecorder(&benchRecorder{}))
	if err != nil {
		b.Fatal(err)
	}
	c.Rotate("call", 1, t0)
	ids := benchIDs(4096)
	now := t0.Add(time.Second)
	job := Job{Owner: "call", Generation: 1, Born: t0}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		job.ID = ids[i&(len(ids)-1)]
		if d, err := c.Offer(job, now); d != Queued {
			b.Fatal(d, err)
		}
		if d, id, _ := c.Take(now); d != Admitted || id != job.ID {
			b.Fatal(d)
		}
		if d, _ := c.Release(job.ID); d != Completed {
			b.Fatal(d)
		}
	}
}

// BenchmarkChannelSemaphore is the baseline: acquire and release of a
// buffered-channel semaphore, which bounds concurrency and nothing else.
func BenchmarkChannelSemaphore(b *testing.B) {
	sem := make(chan struct{}, 1)
	b.ReportAllocs()
	for b.Loop() {
		sem <- struct{}{}
		<-sem
	}
}

// BenchmarkCycleParallel runs the cycle from 8 goroutines on one controller,
// each its own owner.
func BenchmarkCycleParallel(b *testing.B) {
	c := benchController(b, 8)
	ids := benchIDs(1 << 16)
	var owners atomic.Int64
	now := t0.Add(time.Second)
	b.SetParallelism(8 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		o := fmt.Sprint("call-", owners.Add(1))
		c.Rotate(o, 1, t0)
		job := Job{Owner: o, Generation: 1, Born: t0}
		for i := int(owners.Load()) * 4096; pb.Next(); i++ {
			job.ID = ids[i&(len(ids)-1)] + "" // distinct per goroutine via the offset
			d, _ := c.Offer(job, now)
			if d != Queued {
				continue // another goroutine's identity still retained, or queue full
			}
			for {
				d, id, _ := c.Take(now)
				if d == Admitted {
					c.Release(id)
					break
				}
				if d != Busy {
					break
				}
				runtime.Gosched()
			}
		}
	})
}

func BenchmarkChannelSemaphoreParallel(b *testing.B) {
	sem := make(chan struct{}, 8)
	b.SetParallelism(8 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sem <- struct{}{}
			<-sem
		}
	})
}

// BenchmarkHeap reports the live heap after 1M and after 10M cycles: with
// bounded tombstones it stays flat as work grows.
func BenchmarkHeap(b *testing.B) {
	for _, cycles := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprint(cycles), func(b *testing.B) {
			for b.Loop() {
				c := benchController(b, 1)
				c.Rotate("call", 1, t0)
				ids := benchIDs(4096)
				now := t0.Add(time.Second)
				job := Job{Owner: "call", Generation: 1, Born: t0}
				for i := range cycles {
					job.ID = ids[i&(len(ids)-1)]
					c.Offer(job, now)
					c.Take(now)
					c.Release(job.ID)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc), "heap-bytes")
				runtime.KeepAlive(c)
			}
		})
	}
}
