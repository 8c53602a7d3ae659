package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// liveStats are the counters Progress reads while callers run.
type liveStats struct {
	scheduled, offered, active, done, good, turns, stale atomic.Int64
	lag                                                  atomic.Int64 // ns, latest arrival
}

// Run offers cfg.Callers synthetic callers to the server at cfg.Target and
// reports what they got. It returns when every caller has hung up (at the
// latest cfg.Duration after the start, or when ctx ends) and every
// goroutine it started has ended. An error means the run could not start;
// everything that went wrong during it is in the Report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base, ws, err := endpoints(cfg.Target, cfg.Dialect, cfg.AllowRemote)
	if err != nil {
		return nil, err
	}
	var sipTarget string
	if cfg.Dialect == SIP {
		if sipTarget, err = sipURI(cfg.sipAddr(base), cfg.AllowRemote); err != nil {
			return nil, err
		}
	}
	if err := reachable(ctx, base); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Second}
		defer tr.CloseIdleConnections()
		hc = &http.Client{Transport: tr}
	}
	srv := &server{base: base, hc: hc}
	before, beforeErr := srv.stages(ctx)
	metricsBefore, _ := srv.metrics(ctx)
	serverBefore, ownBefore := serverCPU(cfg.ServerPID, metricsBefore), ownCPU()

	rnd := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5851f42d4c957f2d))
	offsets := schedule(cfg, rnd)
	recs := make([]*callerRec, cfg.Callers)
	seeds := make([]uint64, cfg.Callers)
	for i := range recs {
		recs[i] = &callerRec{id: i + 1}
		seeds[i] = rnd.Uint64()
	}

	stats := &liveStats{}
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer cancel()

	progDone := make(chan struct{})
	progStop := make(chan struct{})
	go func() {
		defer close(progDone)
		progress(cfg, start, stats, progStop)
	}()

	var stream *streamer
	if cfg.StreamAudio && cfg.Dialect == Native {
		stream = newStreamer(cfg.frameLen())
	}
	sem := make(chan struct{}, cfg.MaxActive)
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	<-timer.C
launch:
	for i, off := range offsets {
		at := start.Add(off)
		recs[i].scheduled = at
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-runCtx.Done():
				break launch
			}
		}
		stats.scheduled.Add(1)
		select {
		case sem <- struct{}{}:
		case <-runCtx.Done():
			break launch
		}
		stats.lag.Store(int64(time.Since(at)))
		c := &caller{cfg: &cfg, ws: ws, hc: hc, rec: recs[i], stats: stats,
			rnd: rand.New(rand.NewPCG(seeds[i], uint64(i))), stream: stream}
		run := c.run
		switch cfg.Dialect {
		case Twilio:
			run = (&twilioCaller{caller: c}).run
		case SIP:
			run = (&sipCaller{twilioCaller: &twilioCaller{caller: c}, uri: sipTarget}).run
		}
		wg.Go(func() {
			defer func() { <-sem }()
			defer stats.done.Add(1)
			run(runCtx)
			c.rec.left = time.Now()
		})
	}
	wg.Wait()
	ended := time.Now()
	if stream != nil {
		stream.close()
	}
	cancel()
	close(progStop)
	<-progDone

	after, afterErr := srv.settle(ctx, 5*time.Second)
	metricsAfter, _ := srv.metrics(ctx)
	serverAfter, ownAfter := serverCPU(cfg.ServerPID, metricsAfter), ownCPU()
	r := buildReport(cfg, recs, start, ended)
	r.Server = compareServer(r, before, beforeErr, after, afterErr)
	r.Server.BargeIn = bargeMetric(metricsBefore.barge, metricsAfter.barge)
	r.CPU.CallSeconds, r.CPU.ReplyAudioSeconds = callSeconds(recs), replyAudioSeconds(recs)
	if stream != nil {
		r.CPU.Frames = framesReceived(recs) + stream.sent.Load()
	}
	r.CPU.Server = serverAfter.delta(serverBefore, r.CPU.CallSeconds, r.CPU.ReplyAudioSeconds, r.CPU.Frames)
	r.CPU.Generator = ownAfter.delta(ownBefore, r.CPU.CallSeconds, r.CPU.ReplyAudioSeconds, r.CPU.Frames)
	if cfg.Dialect == Twilio || cfg.Dialect == SIP {
		r.twilioNotes()
	}
	if cfg.Progress != nil {
		cfg.Progress(Progress{Elapsed: ended.Sub(start), Duration: cfg.Duration, Scheduled: int(stats.scheduled.Load()),
			Offered: r.Callers.Offered, Callers: cfg.Callers, Done: int(stats.done.Load()),
			Good: r.Goodput.Good, Turns: r.Turns.Offered, Final: true})
	}
	return r, nil
}

// schedule returns each caller's arrival offset from the start.
func schedule(cfg Config, rnd *rand.Rand) []time.Duration {
	out := make([]time.Duration, cfg.Callers)
	mean := float64(time.Second) / cfg.Rate
	var t float64
	for i := range out {
		switch cfg.Arrival {
		case Steady:
			t = float64(i) * mean
		case Burst:
			t = float64(i/cfg.BurstSize) * mean * float64(cfg.BurstSize)
		default:
			if i > 0 {
				t += rnd.ExpFloat64() * mean
			}
		}
		out[i] = time.Duration(t)
	}
	return out
}

func progress(cfg Config, start time.Time, s *liveStats, stop <-chan struct{}) {
	if cfg.Progress == nil {
		return
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		cfg.Progress(Progress{Elapsed: time.Since(start), Duration: cfg.Duration,
			Scheduled: int(s.scheduled.Load()), Offered: int(s.offered.Load()), Callers: cfg.Callers,
			Active: int(s.active.Load()), Done: int(s.done.Load()), Good: int(s.good.Load()),
			Turns: int(s.turns.Load()), Lag: time.Duration(s.lag.Load())})
	}
}

// reachable dials the target's HTTP address once, within ReachTimeout.
func reachable(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return c.Close()
}
