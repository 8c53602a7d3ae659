package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/trace"
)

// traceSettings are serve's flags for recording a stage trace
// (docs/REPLAY.md).
type traceSettings struct {
	file     string
	maxBytes int64
}

func traceFlags(fs *flag.FlagSet) *traceSettings {
	s := &traceSettings{}
	fs.StringVar(&s.file, "record-trace", "", "write every operation of the session, recognize, model and synthesis stages, with its time and outcome, to this file, for frontdoor replay (docs/REPLAY.md); in-process stages only, not with -store")
	fs.Int64Var(&s.maxBytes, "record-trace-max-bytes", trace.DefaultMaxBytes, "when the trace would pass this many bytes (64 MiB by default), recording stops: one warning, a last \"end\" line; admission never waits for the trace")
	return s
}

// traceRecording is a trace being recorded; nil when -record-trace is not
// set.
type traceRecording struct {
	file string
	f    *os.File
	w    *trace.Writer
	log  *slog.Logger
}

// openTrace starts recording for -record-trace (nil, nil without it). The
// fleet's stages are in Redis, where this recorder does not reach: fleet
// mode refuses the flag.
func openTrace(set *traceSettings, fl *fleet, reg prometheus.Registerer, log *slog.Logger) (*traceRecording, error) {
	if set == nil || set.file == "" {
		return nil, nil
	}
	if fl != nil {
		return nil, usageError{errors.New("-record-trace records the in-process stages; it cannot be used with -store (fleet mode)")}
	}
	if set.maxBytes < trace.MinMaxBytes {
		return nil, usageError{fmt.Errorf("-record-trace-max-bytes %d: want at least %d", set.maxBytes, trace.MinMaxBytes)}
	}
	f, err := os.OpenFile(set.file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // call and tenant ids: not for everyone
	if err != nil {
		return nil, fmt.Errorf("-record-trace: %w", err)
	}
	w, err := trace.NewWriter(f, trace.WriterOptions{MaxBytes: set.maxBytes, Logger: log.With("record_trace", set.file)})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("-record-trace %s: %w", set.file, err)
	}
	r := &traceRecording{file: set.file, f: f, w: w, log: log}
	for _, c := range []struct {
		result string
		n      func(trace.Stats) uint64
	}{
		{"recorded", func(s trace.Stats) uint64 { return s.Recorded }},
		{"dropped", func(s trace.Stats) uint64 { return s.Dropped }},
		{"not_recorded", func(s trace.Stats) uint64 { return s.NotRecorded }},
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "frontdoor_trace_operations_total",
			Help:        "Stage operations given to -record-trace: recorded, dropped because its buffer was full, or not recorded after recording ended.",
			ConstLabels: prometheus.Labels{"result": c.result},
		}, func() float64 { return float64(c.n(w.Stats())) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "frontdoor_trace_bytes", Help: "Size of the -record-trace file so far.",
	}, func() float64 { return float64(w.Stats().Bytes) }))
	log.Info("recording stage trace", "file", set.file, "max_bytes", set.maxBytes)
	return r, nil
}

// newGate builds the server's stages as fl.newGate does, each recorded
// when r is set.
func (r *traceRecording) newGate(fl *fleet, policy stages.Policy, log *slog.Logger) func(string, stages.Limits, clock.Clock) (stages.Gate, error) {
	if r == nil {
		return fl.newGate(policy, log)
	}
	return func(name string, l stages.Limits, c clock.Clock) (stages.Gate, error) {
		return session.LocalGate(l, c, log.With("stage", name), stages.WithPolicy(policy), r.w.Stage(name, l, policy, true))
	}
}

// Close ends the recording after the server's stages stopped: the end line,
// and one log line with what was recorded and dropped.
func (r *traceRecording) Close() {
	if r == nil {
		return
	}
	err := r.w.Close()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	s := r.w.Stats()
	attrs := []any{"file", r.file, "operations", s.Recorded, "bytes", s.Bytes, "dropped", s.Dropped, "not_recorded", s.NotRecorded, "ended", s.Ended}
	switch {
	case err != nil:
		r.log.Error("stage trace incomplete: write failed", append(attrs, "err", err)...)
	case s.Dropped > 0:
		r.log.Warn("stage trace recorded with operations dropped: the recorder's buffer was full (replay marks the gaps)", attrs...)
	default:
		r.log.Info("stage trace recorded", attrs...)
	}
}
