package session

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/backend/stub"
)

// BenchmarkIdleSessions holds N idle calls (default 1000; set
// FRONTDOOR_IDLE_SESSIONS) against an in-process server over loopback and
// reports, per session, the live heap, goroutine stacks and goroutines the
// process gained, after a GC and once every call's writer has gone idle.
// The callers are raw TCP connections that do the WebSocket handshake by
// hand and keep nothing but the socket, so that the figures are almost all
// the server's (a client's socket is a few hundred bytes of the heap).
// With FRONTDOOR_IDLE_PROFILE set to a directory, heap.pprof and
// goroutine.txt of the held sessions are written there:
//
//	FRONTDOOR_IDLE_PROFILE=/tmp/idle go test -run '^$' -bench IdleSessions -benchtime 1x ./session
//	go tool pprof -sample_index=inuse_space -top /tmp/idle/heap.pprof
func BenchmarkIdleSessions(b *testing.B) {
	n := 1000
	if v := os.Getenv("FRONTDOOR_IDLE_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("FRONTDOOR_IDLE_SESSIONS=%q", v)
		}
	}
	r := newRig(b, func(c *Config, _ *stub.Settings) {
		c.Session = stages.Limits{Slots: n + 10, Waiting: 10, MaxAge: time.Minute}
	})
	addr := strings.TrimPrefix(r.http.URL, "http://")
	if os.Getenv("FRONTDOOR_IDLE_PROFILE") != "" {
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 1 // every allocation, for the breakdown
	}
	for range b.N {
		idleSessions(b, r, addr, n)
	}
}

func idleSessions(b *testing.B, r *rig, addr string, n int) {
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		waitFor(b, "calls to end", func() bool { return r.srv.Calls() == 0 })
	}()
	settle := func() runtime.MemStats {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m
	}
	before, g0 := settle(), runtime.NumGoroutine()
	for range n {
		c, err := dialIdle(addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Every call's writer goes idle writerLinger after the `session`
	// message.
	time.Sleep(writerLinger + 500*time.Millisecond)
	after, g1 := settle(), runtime.NumGoroutine()
	if r.srv.Calls() != n {
		b.Fatalf("%d calls held, want %d", r.srv.Calls(), n)
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	b.ReportMetric(per(after.HeapAlloc, before.HeapAlloc), "heap-B/session")
	b.ReportMetric(per(after.StackInuse, before.StackInuse), "stack-B/session")
	b.ReportMetric(per(after.HeapAlloc+after.StackInuse, before.HeapAlloc+before.StackInuse), "live-B/session")
	b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/session")
	start := []rtmetrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	rtmetrics.Read(start)
	b.ReportMetric(float64(start[0].Value.Uint64()), "stack-start-B")
	if dir := os.Getenv("FRONTDOOR_IDLE_PROFILE"); dir != "" {
		writeIdleProfiles(b, dir)
	}
}

func writeIdleProfiles(b *testing.B, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, debug := range map[string]int{"heap.pprof": 0, "goroutine.txt": 1} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		prof := strings.TrimSuffix(strings.TrimSuffix(name, ".pprof"), ".txt")
		if err := pprof.Lookup(prof).WriteTo(f, debug); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// dialIdle opens a /v1/session WebSocket by hand and reads until the
// server's `session` admitted message, keeping only the socket.
func dialIdle(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET /v1/session HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	var buf [1024]byte
	have := 0
	for {
		m, err := c.Read(buf[have:])
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("idle caller: %w after %q", err, buf[:have])
		}
		have += m
		got := buf[:have]
		i := bytes.Index(got, []byte("\r\n\r\n"))
		if i < 0 {
			continue
		}
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 101")) {
			c.Close()
			return nil, fmt.Errorf("idle caller: %q", got)
		}
		f := got[i+4:]
		if len(f) < 2 || len(f) < 2+int(f[1]&0x7f) {
			continue // the `session` message (under 126 bytes) is not all here
		}
		if msg := f[2 : 2+int(f[1]&0x7f)]; !bytes.Contains(msg, []byte(`"admitted"`)) {
			c.Close()
			return nil, fmt.Errorf("idle caller: %s", msg)
		}
		_ = c.SetDeadline(time.Time{})
		return c, nil
	}
}
