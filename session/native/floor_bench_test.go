//go:build linux

package native_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkFloor is the floor under the media path (docs/BENCHMARKS.md,
// section 6): the CPU that one frame written and read over loopback TCP
// costs on this machine, both ends in this process, whatever the server
// does around it. Each op is a round trip, a frame one way and a frame
// back, the peer blocked in its read each time as a call's reader and the
// caller's are between 20 ms frames (so a read parks and is woken by the
// poller, as in a call); cpu-µs/pair is the process's user + system CPU
// (getrusage) per frame written and read, wall time aside.
//
//	go test -run '^$' -bench Floor -benchtime 20000x ./session/native/
//
// tcp: raw net.Conn; websocket: coder/websocket, the client's frames
// masked as a browser's are, read and written with a context that cannot
// end (no context.AfterFunc per frame), each message read into a reused
// buffer.
func BenchmarkFloor(b *testing.B) {
	for _, size := range []int{160, 320} {
		b.Run("tcp/"+strconv.Itoa(size)+"B", func(b *testing.B) { floorTCP(b, size) })
		b.Run("websocket/"+strconv.Itoa(size)+"B", func(b *testing.B) { floorWebSocket(b, size) })
	}
}

func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report: one op is two frames, each written and read once.
func report(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu.Microseconds())/float64(2*b.N), "cpu-µs/pair")
}

func floorTCP(b *testing.B, size int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				done <- nil // the client closed
				return
			}
			if _, err := c.Write(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, size)
	b.ResetTimer()
	start := cpuNow(b)
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	report(b, cpuNow(b)-start)
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func floorWebSocket(b *testing.B, size int) {
	ctx := context.Background() // Done is nil: no AfterFunc per frame
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			done <- err
			return
		}
		defer c.CloseNow()
		var buf []byte
		for {
			typ, rd, err := c.Reader(ctx)
			if err == nil {
				buf, err = readAll(rd, buf[:0])
			}
			if err != nil {
				done <- nil // the client closed
				return
			}
			if err := c.Write(ctx, typ, buf); err != nil {
				done <- err
				return
			}
		}
	}))
	defer srv.Close()
	c, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, size)
	var buf []byte
	b.ResetTimer()
	start := cpuNow(b)
	for b.Loop() {
		if err := c.Write(ctx, websocket.MessageBinary, out); err != nil {
			b.Fatal(err)
		}
		_, rd, err := c.Reader(ctx)
		if err == nil {
			buf, err = readAll(rd, buf[:0])
		}
		if err != nil || len(buf) != size {
			b.Fatal(err, len(buf))
		}
	}
	report(b, cpuNow(b)-start)
	c.CloseNow()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func readAll(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, 2048)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
