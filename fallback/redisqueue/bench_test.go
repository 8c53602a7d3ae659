package redisqueue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/redisqueue"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// The benchmarks run against a redis-server started on loopback, one per
// top-level benchmark; each run of a sub-benchmark (the testing package runs
// it more than once) gets fresh queues under a new name, so no run sees
// another's records. docs/BENCHMARKS.md ("Fleet fallback queues on Redis
// Streams") has the figures and the command.

var benchEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// benchSeq names each run's queues.
var benchSeq atomic.Int64

func benchName(kind string) string { return fmt.Sprintf("bench-%s-%d", kind, benchSeq.Add(1)) }

// commandCounter is a go-redis hook that counts what a client sends: one
// per command and one per pipeline, so a round trip each. A script's first
// run is two (EVALSHA answered NOSCRIPT, then EVAL).
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// countedClient is a client of srv whose round trips are counted.
func countedClient(b *testing.B, srv *redistest.Server) (*redis.Client, *commandCounter) {
	rdb := srv.Client(b)
	var c commandCounter
	rdb.AddHook(&c)
	return rdb, &c
}

// measure runs op b.N times as the timed part and reports round trips per
// op when c is not nil. Background work sharing the client (a Service's
// fleet loop) is counted too: it is part of the cost.
func measure(b *testing.B, c *commandCounter, op func(i int)) {
	b.Helper()
	b.ReportAllocs()
	var start int64
	if c != nil {
		start = c.n.Load()
	}
	b.ResetTimer()
	for i := range b.N {
		op(i)
	}
	b.StopTimer()
	if c != nil {
		b.ReportMetric(float64(c.n.Load()-start)/float64(b.N), "round-trips/op")
	}
}

// benchCallbackConfig books without caps: every op books the same number,
// which the default caps refuse after the first few.
func benchCallbackConfig() fallback.Config {
	cfg := fallback.DefaultConfig()
	cfg.DataDir = ""
	cfg.Bookings = fallback.BookingLimits{}
	return cfg
}

// BenchmarkCallbackCycle is one callback's whole life per op: accepted,
// claimed by an operator (the oldest waiting), finished as completed. The
// queue is empty between ops. store=* call the stores directly; service=*
// go through fallback.Service (RequestCallback, ClaimCallback,
// FinishCallback), which is what a caller and an operator cost: with the
// default SQLite store and the process's own stage, and in fleet mode with
// the Redis store. The SQLite store fsyncs every write (synchronous=FULL);
// redis is a server without persistence, redis-aof one with appendonly yes
// and appendfsync always, the setting under which a callback on Redis is
// as durable as on SQLite (docs/FLEET.md).
func BenchmarkCallbackCycle(b *testing.B) {
	ctx := context.Background()
	type server struct {
		name string
		rdb  *redis.Client
		rt   *commandCounter
	}
	var servers []server
	for _, s := range []struct {
		name  string
		start func(testing.TB) *redistest.Server
	}{{"redis", redistest.Start}, {"redis-aof", redistest.StartPersistent}} {
		rdb, rt := countedClient(b, s.start(b))
		servers = append(servers, server{s.name, rdb, rt})
	}

	for _, srv := range servers {
		b.Run("store="+srv.name, func(b *testing.B) {
			st := redisqueue.NewCallbackStore(srv.rdb, benchName("cb"), benchCallbackConfig())
			measure(b, srv.rt, func(i int) {
				ref := fmt.Sprint("cb_", i)
				if _, created, err := st.Accept(ctx, fallback.Callback{Ref: ref, Call: fmt.Sprint("call", i), Turn: "t1", Number: "+15550100", Accepted: benchEpoch}); err != nil || !created {
					b.Fatal(created, err)
				}
				c, err := st.Next(ctx, "op1", "", benchEpoch)
				if err != nil || c.Ref != ref {
					b.Fatal(c.Ref, err)
				}
				if _, err := st.Finish(ctx, ref, c.Attempt, fallback.StatusCompleted, "called back", benchEpoch); err != nil {
					b.Fatal(err)
				}
			})
		})
	}

	// The SQLite store has no Next (the Service's stage orders claims), so
	// this claims by ticket.
	b.Run("store=sqlite", func(b *testing.B) {
		st, err := fallback.OpenSQLite(ctx, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		measure(b, nil, func(i int) {
			ref := fmt.Sprint("cb_", i)
			if _, created, err := st.Accept(ctx, fallback.Callback{Ref: ref, Call: fmt.Sprint("call", i), Turn: "t1", Number: "+15550100", Accepted: benchEpoch}); err != nil || !created {
				b.Fatal(created, err)
			}
			c, err := st.Claim(ctx, ref, "op1", benchEpoch, benchEpoch.Add(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.Finish(ctx, ref, c.Attempt, fallback.StatusCompleted, "called back", benchEpoch); err != nil {
				b.Fatal(err)
			}
		})
	})

	serviceCycle := func(b *testing.B, svc *fallback.Service, c *commandCounter) {
		measure(b, c, func(i int) {
			res, err := svc.RequestCallback(ctx, fallback.CallbackRequest{Call: fmt.Sprint("call", i), Turn: "t1", Number: "+15550100", Consent: true})
			if err != nil || res.Ref == "" {
				b.Fatal(res, err)
			}
			cb, err := svc.ClaimCallback(ctx, "op1")
			if err != nil || cb.Ref != res.Ref {
				b.Fatal(cb.Ref, err)
			}
			if _, err := svc.FinishCallback(ctx, cb.Ref, cb.Attempt, fallback.StatusCompleted, "called back"); err != nil {
				b.Fatal(err)
			}
		})
	}

	b.Run("service=sqlite", func(b *testing.B) {
		cfg := benchCallbackConfig()
		cfg.DataDir = b.TempDir()
		svc, err := fallback.New(ctx, cfg, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { svc.Close() })
		serviceCycle(b, svc, nil)
	})

	for _, srv := range servers {
		b.Run("service="+srv.name, func(b *testing.B) {
			cfg := benchCallbackConfig()
			svc, err := fallback.New(ctx, cfg, nil, nil, fallback.WithStore(redisqueue.NewCallbackStore(srv.rdb, benchName("cb"), cfg)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { svc.Close() })
			serviceCycle(b, svc, srv.rt)
		})
	}
}

// BenchmarkHandoffCycle is one handoff's queue cycle per op: a caller
// enqueued, claimed by an agent as the head, acknowledged. The queue is
// empty between ops.
func BenchmarkHandoffCycle(b *testing.B) {
	srv := redistest.Start(b)
	rdb, rt := countedClient(b, srv)
	ctx := context.Background()
	q := redisqueue.NewHandoffQueue(rdb, benchName("ho"), benchCallbackConfig(), time.Hour)
	measure(b, rt, func(i int) {
		ref := fmt.Sprint("ho_", i)
		if _, d, err := q.Enqueue(ctx, fallback.HandoffEntry{Ref: ref, Call: fmt.Sprint("call", i), Turn: "t1", Summary: "billing question", Born: benchEpoch}); err != nil || d != stages.Queued {
			b.Fatal(d, err)
		}
		e, err := q.Claim(ctx, "agent1", "", benchEpoch)
		if err != nil || e.Ref != ref {
			b.Fatal(e.Ref, err)
		}
		if _, err := q.Ack(ctx, ref, e.Attempt, time.Now()); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkUpkeep is what every replica runs on each queue in fleet mode
// (Sweep each second, Snapshot each 250 ms): one Sweep or one Snapshot per
// op with the queue
// holding 0 or 1000 waiting tickets, none due (nothing expires, no claim
// ran out), so each op is the steady-state cost. "delivered" is 1000
// waiting callbacks that were all read by the consumer group already (an
// operator claimed the newest by ticket, then returned it), so they sit in
// the group's pending entries list, which Sweep's XAUTOCLAIM scans.
func BenchmarkUpkeep(b *testing.B) {
	srv := redistest.Start(b)
	rdb, rt := countedClient(b, srv)
	ctx := context.Background()
	cfg := benchCallbackConfig()
	cfg.HandoffQueue = 2000
	const full = 1000

	callbacks := func(n int, delivered bool) *redisqueue.CallbackStore {
		st := redisqueue.NewCallbackStore(rdb, benchName("cb"), cfg)
		for i := range n {
			if _, _, err := st.Accept(ctx, fallback.Callback{Ref: fmt.Sprint("cb_", i), Call: fmt.Sprint("call", i), Turn: "t1", Number: "+15550100", Accepted: benchEpoch}); err != nil {
				b.Fatal(err)
			}
		}
		if delivered {
			last := fmt.Sprint("cb_", n-1)
			c, err := st.Claim(ctx, last, "op1", benchEpoch, benchEpoch.Add(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Return(ctx, last, c.Attempt, benchEpoch); err != nil {
				b.Fatal(err)
			}
		}
		if sn, err := st.Snapshot(ctx, benchEpoch); err != nil || sn.Queued != n {
			b.Fatalf("callbacks waiting: %d, want %d (%v)", sn.Queued, n, err)
		}
		return st
	}
	handoffs := func(n int) *redisqueue.HandoffQueue {
		q := redisqueue.NewHandoffQueue(rdb, benchName("ho"), cfg, time.Hour)
		for i := range n {
			if _, _, err := q.Enqueue(ctx, fallback.HandoffEntry{Ref: fmt.Sprint("ho_", i), Call: fmt.Sprint("call", i), Turn: "t1", Born: benchEpoch}); err != nil {
				b.Fatal(err)
			}
		}
		if sn, err := q.Snapshot(ctx, benchEpoch); err != nil || sn.Queued != n {
			b.Fatalf("handoffs waiting: %d, want %d (%v)", sn.Queued, n, err)
		}
		return q
	}

	type queue struct {
		name     string
		sweep    func() error
		snapshot func() error
	}
	now := benchEpoch.Add(time.Minute)
	var qs []queue
	for _, c := range []struct {
		name      string
		n         int
		delivered bool
	}{{"waiting=0", 0, false}, {"waiting=1000", full, false}, {"waiting=1000-delivered", full, true}} {
		st := callbacks(c.n, c.delivered)
		qs = append(qs, queue{"callbacks/" + c.name,
			func() error { return st.Sweep(ctx, now) },
			func() error { _, err := st.Snapshot(ctx, now); return err }})
	}
	for _, n := range []int{0, full} {
		q := handoffs(n)
		qs = append(qs, queue{fmt.Sprint("handoffs/waiting=", n),
			func() error { return q.Sweep(ctx, now) },
			func() error { _, err := q.Snapshot(ctx, now); return err }})
	}
	for _, q := range qs {
		for _, op := range []struct {
			name string
			f    func() error
		}{{"sweep", q.sweep}, {"snapshot", q.snapshot}} {
			b.Run(op.name+"/"+q.name, func(b *testing.B) {
				measure(b, rt, func(int) {
					if err := op.f(); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
