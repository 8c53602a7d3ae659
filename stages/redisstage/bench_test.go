package redisstage_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// benchCycle runs one offer+take+release cycle per iteration: three
// admission decisions.
func benchCycle(b *testing.B, s admit.Store) {
	ctx := context.Background()
	if err := s.Rotate(ctx, "o", 1, stagesEpoch); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprint("j", i)
		if _, err := s.Offer(ctx, stages.Job{ID: id, Owner: "o", Generation: 1, Born: stagesEpoch}, stagesEpoch); err != nil {
			b.Fatal(err)
		}
		if d, _, err := s.Take(ctx, stagesEpoch); err != nil || d != stages.Admitted {
			b.Fatal(d, err)
		}
		if _, err := s.Release(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(3*b.N), "ns/decision")
}

var stagesEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func BenchmarkAdmission(b *testing.B) {
	l := stages.Limits{Slots: 4, Waiting: 4, MaxAge: time.Hour, Tombstones: 1024}
	b.Run("inprocess", func(b *testing.B) {
		c, _ := admit.New(l)
		benchCycle(b, admit.LocalStore(c))
	})
	b.Run("redis", func(b *testing.B) {
		srv := redistest.Start(b)
		s, err := redisstage.New(srv.Client(b), fmt.Sprint("bench", stageSeq.Add(1)), l, redisstage.Options{Warmup: -1})
		if err != nil {
			b.Fatal(err)
		}
		benchCycle(b, s)
	})
	b.Run("redis-parallel8", func(b *testing.B) {
		srv := redistest.Start(b)
		s, err := redisstage.New(srv.Client(b), fmt.Sprint("bench", stageSeq.Add(1)), stages.Limits{Slots: 64, Waiting: 64, MaxAge: time.Hour, Tombstones: 1024}, redisstage.Options{Warmup: -1})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		var seq atomicSeq
		b.SetParallelism(4) // 8 goroutines on 2 cores
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			owner := fmt.Sprint("o", seq.next())
			_ = s.Rotate(ctx, owner, 1, stagesEpoch)
			for i := 0; pb.Next(); i++ {
				id := fmt.Sprint(owner, "-", i)
				if d, err := s.Offer(ctx, stages.Job{ID: id, Owner: owner, Generation: 1, Born: stagesEpoch}, stagesEpoch); err != nil || d != stages.Queued {
					continue
				}
				if d, got, err := s.Take(ctx, stagesEpoch); err == nil && d == stages.Admitted {
					_, _ = s.Release(ctx, got)
				}
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(3*b.N), "ns/decision")
	})
}

type atomicSeq struct{ n atomic.Int64 }

func (s *atomicSeq) next() int64 { return s.n.Add(1) }
