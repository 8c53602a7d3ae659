package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStatusError(t *testing.T) {
	h := http.Header{"Retry-After": {"7"}}
	for _, tc := range []struct {
		status int
		want   error
		kind   Kind
		retry  time.Duration
	}{
		{429, ErrOverloaded, KindOverloaded, 7 * time.Second},
		{503, ErrOverloaded, KindOverloaded, 7 * time.Second},
		{500, ErrUnavailable, KindUnavailable, 0},
		{502, ErrUnavailable, KindUnavailable, 0},
		{401, ErrRejected, KindRejected, 0},
	} {
		err := error(StatusError("openai", "reply", tc.status, h, time.Time{}, nil))
		var e *Error
		if !errors.Is(err, tc.want) || KindOf(err) != tc.kind || !errors.As(err, &e) || e.RetryAfter != tc.retry {
			t.Errorf("%d: %v kind %v", tc.status, err, KindOf(err))
		}
	}
	// A Retry-After date is read against the now given, not the wall clock.
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	date := http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}
	if e := StatusError("openai", "reply", 429, date, now, nil); e.RetryAfter != 30*time.Second {
		t.Errorf("Retry-After date: %v, want 30s", e.RetryAfter)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"-1":                            0,
		"NaN":                           0,
		"1e9":                           time.Hour,
		"soon":                          0,
		"Mon, 30 Nov 2026 08:00:10 GMT": 10 * time.Second,
		"Mon, 30 Nov 2026 07:00:10 GMT": 0,
	} {
		if got := ParseRetryAfter(in, now); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

func TestKindOf(t *testing.T) {
	for err, want := range map[error]Kind{
		nil:              KindOK,
		context.Canceled: KindCanceled,
		fmt.Errorf("x: %w", context.DeadlineExceeded): KindDeadline,
		fmt.Errorf("x: %w", ErrStalled):               KindStalled,
		&Error{Kind: KindMalformed}:                   KindMalformed,
		EmitError("stub", "reply", context.Canceled):  KindEmit,
		errors.New("?"):                               KindOther,
	} {
		if got := KindOf(err); got != want {
			t.Errorf("KindOf(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestIsUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = net.Dial("tcp", addr)
	if err == nil || !IsUnreachable(err) {
		t.Fatalf("refused dial: %v", err)
	}
	if IsUnreachable(errors.New("x")) || IsUnreachable(nil) {
		t.Fatal("plain error unreachable")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Observe("model/openai", nil)
	m.Observe("model/openai", StatusError("openai", "reply", 429, nil, time.Time{}, nil))
	m2 := NewMetrics(reg) // a second server on the same registry shares the counters
	m2.Observe("model/openai", context.Canceled)
	if got := testutil.ToFloat64(m.Requests("model/openai")); got != 3 {
		t.Fatalf("requests %v", got)
	}
	if got := testutil.ToFloat64(m.Failures("model/openai", KindOverloaded)); got != 1 {
		t.Fatalf("overloaded %v", got)
	}
	if got := testutil.ToFloat64(m.Failures("model/openai", KindCanceled)); got != 1 {
		t.Fatalf("canceled %v", got)
	}
}
