package session

import (
	"bytes"
	"encoding/binary"
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

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/outbound"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/stages"
)

// BenchmarkIdleSessions holds N idle calls (default 1000; set
// FRONTDOOR_IDLE_SESSIONS) against an in-process server over loopback and
// reports, per session, the live heap, goroutine stacks and goroutines the
// process gained, after a GC and once every call's writer has gone idle:
// "idle" callers say nothing once admitted; "after-a-turn" callers first
// speak one turn and read its reply to turn_end. The callers are raw TCP
// connections that do the WebSocket handshake by hand and keep nothing but
// the socket, so that the figures are almost all the server's (a client's
// socket is a few hundred bytes of the heap). Stacks include the holes
// that goroutines which have ended (a call's writer, after a second) leave
// in the runtime's stack spans, until new goroutines take them. With
// FRONTDOOR_IDLE_PROFILE set to a directory, heap.pprof and goroutine.txt
// of the held sessions are written there (in a directory per case):
//
//	FRONTDOOR_IDLE_PROFILE=/tmp/idle go test -run '^$' -bench IdleSessions -benchtime 1x ./session
//	go tool pprof -sample_index=inuse_space -top /tmp/idle/idle/heap.pprof
func BenchmarkIdleSessions(b *testing.B) {
	n := 1000
	if v := os.Getenv("FRONTDOOR_IDLE_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("FRONTDOOR_IDLE_SESSIONS=%q", v)
		}
	}
	for _, turn := range []bool{false, true} {
		name := "idle"
		if turn {
			name = "after-a-turn"
		}
		b.Run(name, func(b *testing.B) {
			r := newRig(b, func(c *Config, _ *stub.Settings) {
				c.Session = stages.Limits{Slots: n + 10, Waiting: 10, MaxAge: time.Minute}
			})
			addr := strings.TrimPrefix(r.HTTP.URL, "http://")
			dir := os.Getenv("FRONTDOOR_IDLE_PROFILE")
			if dir != "" {
				dir = filepath.Join(dir, name)
				defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
				runtime.MemProfileRate = 1 // every allocation, for the breakdown
			}
			for range b.N {
				idleSessions(b, r, addr, n, turn, dir)
			}
		})
	}
}

func idleSessions(b *testing.B, r *rig, addr string, n int, turn bool, dir string) {
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		sessiontest.WaitFor(b, "calls to end", func() bool { return r.Engine.Calls() == 0 })
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
		c, err := dialIdle(addr, turn)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Every call's writer goes idle outbound.Linger after the `session`
	// message.
	time.Sleep(outbound.Linger + 500*time.Millisecond)
	after, g1 := settle(), runtime.NumGoroutine()
	if r.Engine.Calls() != n {
		b.Fatalf("%d calls held, want %d", r.Engine.Calls(), n)
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	b.ReportMetric(per(after.HeapAlloc, before.HeapAlloc), "heap-B/session")
	b.ReportMetric(per(after.StackInuse, before.StackInuse), "stack-B/session")
	b.ReportMetric(per(after.HeapAlloc+after.StackInuse, before.HeapAlloc+before.StackInuse), "live-B/session")
	b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/session")
	start := []rtmetrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	rtmetrics.Read(start)
	b.ReportMetric(float64(start[0].Value.Uint64()), "stack-start-B")
	if dir != "" {
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
// server's `session` admitted message (with turn, then sends a turn and
// reads to its turn_end), keeping only the socket.
func dialIdle(addr string, turn bool) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := handshakeIdle(c, addr, turn); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func handshakeIdle(c net.Conn, addr string, turn bool) error {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET /v1/session HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		return err
	}
	fr := &rawFrames{c: c}
	for !bytes.Contains(fr.buf, []byte("\r\n\r\n")) {
		if err := fr.more(); err != nil {
			return fmt.Errorf("idle caller: %w after %q", err, fr.buf)
		}
	}
	if !bytes.HasPrefix(fr.buf, []byte("HTTP/1.1 101")) {
		return fmt.Errorf("idle caller: %q", fr.buf)
	}
	fr.buf = fr.buf[bytes.Index(fr.buf, []byte("\r\n\r\n"))+4:]
	until := func(what string) error {
		for {
			op, msg, err := fr.next()
			if err != nil {
				return fmt.Errorf("idle caller: waiting for %s: %w", what, err)
			}
			if op == 1 && bytes.Contains(msg, []byte(what)) {
				return nil
			}
		}
	}
	if err := until(`"admitted"`); err != nil {
		return err
	}
	if turn {
		// A client frame is masked; a zero key leaves the payload as is.
		msg := `{"type":"turn","id":"t1","text":"good morning"}`
		if _, err := c.Write(append([]byte{0x81, 0x80 | byte(len(msg)), 0, 0, 0, 0}, msg...)); err != nil {
			return err
		}
		if err := until(`"turn_end"`); err != nil {
			return err
		}
	}
	return c.SetDeadline(time.Time{})
}

// rawFrames reads a server's (unmasked) WebSocket frames from c.
type rawFrames struct {
	c   net.Conn
	buf []byte
}

func (f *rawFrames) more() error {
	var b [4096]byte
	n, err := f.c.Read(b[:])
	f.buf = append(f.buf, b[:n]...)
	return err
}

func (f *rawFrames) next() (op byte, payload []byte, err error) {
	need := func(n int) error {
		for len(f.buf) < n {
			if err := f.more(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := need(2); err != nil {
		return 0, nil, err
	}
	n, h := int(f.buf[1]&0x7f), 2
	switch n {
	case 126:
		if err := need(4); err != nil {
			return 0, nil, err
		}
		n, h = int(binary.BigEndian.Uint16(f.buf[2:4])), 4
	case 127:
		if err := need(10); err != nil {
			return 0, nil, err
		}
		n, h = int(binary.BigEndian.Uint64(f.buf[2:10])), 10
	}
	if err := need(h + n); err != nil {
		return 0, nil, err
	}
	op, payload = f.buf[0]&0x0f, f.buf[h:h+n]
	f.buf = f.buf[h+n:]
	return op, payload, nil
}
