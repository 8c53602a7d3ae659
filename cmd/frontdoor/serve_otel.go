package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// otlpSettings are serve's -otlp-* flags: where traces go.
type otlpSettings struct {
	endpoint string
	insecure bool
	sample   float64
}

func otlpFlags(fs *flag.FlagSet) *otlpSettings {
	o := &otlpSettings{}
	fs.StringVar(&o.endpoint, "otlp-endpoint", "", "export traces over OTLP/HTTP to this HOST:PORT (POST /v1/traces), e.g. a collector on 127.0.0.1:4318: a span per call, turn, stage wait and lease (empty: no tracing, at no cost)")
	fs.BoolVar(&o.insecure, "otlp-insecure", false, "-otlp-endpoint speaks plain HTTP, not HTTPS (a collector on loopback or a private network)")
	fs.Float64Var(&o.sample, "otlp-sample", 1, "fraction of calls traced (0 to 1); a traced call has every span of its turns")
	return o
}

// tracing is serve's tracer provider and what it must end at shutdown.
type tracing struct {
	tp        *sdktrace.TracerProvider
	transport *http.Transport
}

// start builds the OTLP exporter and the tracer provider, or returns a nil
// *tracing when -otlp-endpoint is empty. Nothing is dialled here: the
// first batch of spans opens the connection, so a collector that is not
// up yet does not stop the server from starting (export failures are
// logged as warnings).
func (o *otlpSettings) start(log *slog.Logger) (*tracing, error) {
	if o.endpoint == "" {
		return nil, nil
	}
	if _, _, err := net.SplitHostPort(o.endpoint); err != nil {
		return nil, usageError{fmt.Errorf("-otlp-endpoint %q: want HOST:PORT (%v)", o.endpoint, err)}
	}
	if o.sample < 0 || o.sample > 1 {
		return nil, usageError{fmt.Errorf("-otlp-sample %v: want a fraction from 0 to 1", o.sample)}
	}
	// A transport of its own, so that shutdown can close its idle
	// connections: the exporter's shared default transport would keep
	// them (and their goroutines) after the provider is shut down.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpoint(o.endpoint),
		otlptracehttp.WithHTTPClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}),
	}
	if o.insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("-otlp-endpoint: %w", err)
	}
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	// Ours first, so that OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// in the environment win.
	res, err := resource.New(context.Background(),
		resource.WithAttributes(attribute.String("service.name", "frontdoor"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("otlp resource: %w", err)
	}
	// The SDK reports export failures to the global handler only.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("otlp export", "err", err) }))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.sample))),
	)
	scheme := "https"
	if o.insecure {
		scheme = "http"
	}
	log.Info("tracing", "otlp", scheme+"://"+o.endpoint+"/v1/traces", "sample", o.sample)
	return &tracing{tp: tp, transport: tr}, nil
}

// provider is the session server's TracerProvider: nil (no spans at all)
// when tracing is off. (A nil *tracing must not become a non-nil
// interface holding a nil pointer.)
func (t *tracing) provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

// shutdown flushes the spans still batched and ends the exporter's
// goroutines and connections. It is called once every call has ended, so
// that the last calls' spans are in the flush; again later it does
// nothing.
func (t *tracing) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	err := t.tp.Shutdown(ctx)
	t.transport.CloseIdleConnections()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("traces not all flushed: %w", err)
	}
	return err
}

// flushTraces shuts the tracer provider down within a bound of its own (the
// server's shutdown may have used its own up).
func flushTraces(t *tracing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		log.Warn("tracing shutdown", "err", err)
	}
}
