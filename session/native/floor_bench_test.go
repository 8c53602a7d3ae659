//go:build linux

package native_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
//	go test -run '^$' -bench 'Floor$' -benchtime 20000x ./session/native/
//
// tcp: raw net.Conn; websocket: coder/websocket, the client's frames
// masked as a browser's are, read and written with a context that cannot
// end (no context.AfterFunc per frame), each message read into a reused
// buffer. In-process, both ends share one Go runtime, whose idle P spins
// for the peer's wake-up; 2proc puts the echoing end in a process of its
// own (this test binary again, started with floorPeerEnv set), as the server and the load
// generator are: each frame then wakes a process asleep in epoll_wait,
// and the CPU is both processes' (the peer's from its first frame to its
// last).
func BenchmarkFloor(b *testing.B) {
	for _, size := range []int{160, 320} {
		b.Run("tcp/"+strconv.Itoa(size)+"B", func(b *testing.B) { floorTCP(b, size) })
		b.Run("websocket/"+strconv.Itoa(size)+"B", func(b *testing.B) { floorWebSocket(b, size) })
		b.Run("tcp-2proc/"+strconv.Itoa(size)+"B", func(b *testing.B) { floorPeer(b, "tcp", size) })
		b.Run("websocket-2proc/"+strconv.Itoa(size)+"B", func(b *testing.B) { floorPeer(b, "websocket", size) })
	}
}

// floorPeerEnv names the peer's mode; the test binary started with it set
// is BenchmarkFloor's peer and runs no test.
const floorPeerEnv = "FRONTDOOR_FLOOR_PEER"

func init() {
	if mode := os.Getenv(floorPeerEnv); mode != "" {
		run := floorPeerMain
		if strings.HasPrefix(mode, "calls-") {
			run = floorCallsPeer // BenchmarkFloorCalls
		}
		if err := run(mode); err != nil {
			fmt.Fprintln(os.Stderr, "floor peer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// floorPeerMain is BenchmarkFloor's echoing end in a process of its own.
// It prints its address, echoes one connection's frames until the client
// closes, then prints the CPU it spent from the first frame on.
func floorPeerMain(mode string) error {
	var start time.Duration
	first := func() {
		if start == 0 {
			start = rusageCPU()
		}
	}
	switch mode {
	case "tcp":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		fmt.Printf("ADDR %s\n", ln.Addr())
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		size, _ := strconv.Atoi(os.Getenv(floorPeerEnv + "_SIZE"))
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				break
			}
			first()
			if _, err := c.Write(buf); err != nil {
				break
			}
		}
	case "websocket":
		ctx := context.Background()
		done := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(done)
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
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
					return
				}
				first()
				if err := c.Write(ctx, typ, buf); err != nil {
					return
				}
			}
		}))
		fmt.Printf("ADDR %s\n", srv.Listener.Addr())
		<-done
		srv.Close()
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	fmt.Printf("CPU %d\n", rusageCPU()-start)
	return nil
}

// startPeer starts this test binary as a benchmark's peer with env set,
// and returns it with its standard input and output once it printed its
// address. The test's end kills what is still running.
func startPeer(b *testing.B, env ...string) (cmd *exec.Cmd, in io.Writer, out *bufio.Scanner, addr string) {
	cmd = exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if cmd.ProcessState == nil { // not waited for
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	out = bufio.NewScanner(stdout)
	for addr == "" && out.Scan() {
		addr, _ = strings.CutPrefix(out.Text(), "ADDR ")
	}
	if addr == "" {
		b.Fatal("the peer printed no address")
	}
	return cmd, in, out, addr
}

func floorPeer(b *testing.B, mode string, size int) {
	cmd, _, lines, addr := startPeer(b, floorPeerEnv+"="+mode, floorPeerEnv+"_SIZE="+strconv.Itoa(size))
	var err error
	ctx := context.Background()
	var write func([]byte) error
	var read func([]byte) ([]byte, error)
	var closeConn func()
	switch mode {
	case "tcp":
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		write = func(p []byte) error { _, err := c.Write(p); return err }
		read = func(p []byte) ([]byte, error) { p = p[:size]; _, err := io.ReadFull(c, p); return p, err }
		closeConn = func() { c.Close() }
	default:
		c, _, err := websocket.Dial(ctx, "ws://"+addr, nil)
		if err != nil {
			b.Fatal(err)
		}
		write = func(p []byte) error { return c.Write(ctx, websocket.MessageBinary, p) }
		read = func(p []byte) ([]byte, error) {
			_, rd, err := c.Reader(ctx)
			if err != nil {
				return p, err
			}
			return readAll(rd, p[:0])
		}
		closeConn = func() { c.CloseNow() }
	}
	msg, buf := make([]byte, size), make([]byte, 0, 2048)
	b.ResetTimer()
	start := cpuNow(b)
	for b.Loop() {
		if err := write(msg); err != nil {
			b.Fatal(err)
		}
		if buf, err = read(buf); err != nil || len(buf) != size {
			b.Fatal(err, len(buf))
		}
	}
	self := cpuNow(b) - start
	closeConn()
	var peer time.Duration
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "CPU "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			peer = time.Duration(n)
		}
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	report(b, self+peer)
}

func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func cpuNow(b *testing.B) time.Duration {
	d := rusageCPU()
	if d == 0 {
		b.Fatal("getrusage")
	}
	return d
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
