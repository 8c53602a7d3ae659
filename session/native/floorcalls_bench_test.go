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
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkFloorCalls is the floor under the media benchmark
// (docs/BENCHMARKS.md, section 6) at its scale: N two-way calls over
// loopback, 640 B (20 ms of 16 kHz PCM16) every 20 ms each way, the
// "server" in a process of its own (this test binary again) doing nothing
// but the sockets: per call one goroutine reading frames into a reused
// buffer, and per core one ticker writing every call's next frame in
// turn, the cheapest pacing there is. The benchmark's side is the
// generator, built the same way, and it times each reply frame's arrival.
// No admission, no VAD, no outbound queue, no backend: what any server
// of this design spends at least, on this machine, for the same traffic.
//
//	go test -run '^$' -bench FloorCalls -benchtime 1x -timeout 30m ./session/native/
//
// Each sub-benchmark is one run of floorCallsFor, after every call is
// connected and a second of warm-up. Its metrics are each process's user
// + system CPU (getrusage over the measured window) per call-second and
// per frame moved (the reply frames the generator read and the caller
// frames the server read), the reply frames received per call-second (50
// when the two keep real time), and the reply frames' |gap - 20 ms|, as
// frontdoor load measures jitter.
//
// FRONTDOOR_FLOOR_CPUPROFILE writes the server peer's CPU profile over the
// measured window; FRONTDOOR_FLOOR_BALLAST gives each of its calls state
// of that many bytes that every frame read touches (a byte in every
// FRONTDOOR_FLOOR_BALLAST_STRIDE, default 64: a cache line), to see what a
// server's per-call state costs the socket work around it.
func BenchmarkFloorCalls(b *testing.B) {
	for _, mode := range []string{"tcp", "websocket"} {
		for _, n := range floorCallsN() {
			// One run whatever b.N: it lasts floorCallsFor, and the
			// default -benchtime asks for no second.
			b.Run(mode+"/"+strconv.Itoa(n), func(b *testing.B) { floorCalls(b, mode, n) })
		}
	}
}

const (
	floorCallsFor   = 10 * time.Second
	floorCallsFrame = 640
	floorCallsGap   = 20 * time.Millisecond
	floorCallsSlots = 4 // each ticker's period is cut in this many groups of calls
)

// floorConn is one end of a call: a frame written, or read whole.
type floorConn struct {
	write func([]byte) error
	read  func([]byte) ([]byte, error)
	close func()
}

func tcpEnd(c net.Conn) *floorConn {
	return &floorConn{
		write: func(p []byte) error { _, err := c.Write(p); return err },
		read:  func(p []byte) ([]byte, error) { p = p[:floorCallsFrame]; _, err := io.ReadFull(c, p); return p, err },
		close: func() { c.Close() },
	}
}

func wsEnd(c *websocket.Conn) *floorConn {
	ctx := context.Background() // Done is nil: no AfterFunc per frame
	return &floorConn{
		write: func(p []byte) error { return c.Write(ctx, websocket.MessageBinary, p) },
		read: func(p []byte) ([]byte, error) {
			_, rd, err := c.Reader(ctx)
			if err != nil {
				return p, err
			}
			return readAll(rd, p[:0])
		},
		close: func() { c.CloseNow() },
	}
}

// floorPacer writes a frame to each of its calls every floorCallsGap: one
// goroutine per core, each tick a group of calls (as the load generator's
// streamShard does).
type floorPacer struct {
	mu    sync.Mutex
	slots [floorCallsSlots][]*floorConn
	n     int
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newFloorPacers(shards int) []*floorPacer {
	ps := make([]*floorPacer, shards)
	frame := make([]byte, floorCallsFrame)
	for i := range ps {
		p := &floorPacer{stop: make(chan struct{})}
		ps[i] = p
		p.wg.Go(func() {
			t := time.NewTicker(floorCallsGap / floorCallsSlots)
			defer t.Stop()
			var batch []*floorConn
			for k := 0; ; k = (k + 1) % floorCallsSlots {
				select {
				case <-p.stop:
					return
				case <-t.C:
				}
				p.mu.Lock()
				batch = append(batch[:0], p.slots[k]...)
				p.mu.Unlock()
				for _, c := range batch {
					_ = c.write(frame)
				}
			}
		})
	}
	return ps
}

func (p *floorPacer) add(c *floorConn) {
	p.mu.Lock()
	p.slots[p.n%floorCallsSlots] = append(p.slots[p.n%floorCallsSlots], c)
	p.n++
	p.mu.Unlock()
}

func stopPacers(ps []*floorPacer) {
	for _, p := range ps {
		close(p.stop)
		p.wg.Wait()
	}
}

// floorCallsPeer is the server's end in its own process: it prints its
// address, serves every connection until stdin says STOP, and prints the
// CPU it spent between START and STOP.
func floorCallsPeer(mode string) error {
	pacers := newFloorPacers(runtime.GOMAXPROCS(0))
	var next, frames atomic.Int64
	// FRONTDOOR_FLOOR_BALLAST (bytes): per call, state of that size that
	// each frame read touches (a byte every FRONTDOOR_FLOOR_BALLAST_STRIDE
	// bytes: a cache line, or with 4096 a page), as a server's per-call
	// state does; 0, the floor itself.
	ballast, _ := strconv.Atoi(os.Getenv("FRONTDOOR_FLOOR_BALLAST"))
	stride, _ := strconv.Atoi(os.Getenv("FRONTDOOR_FLOOR_BALLAST_STRIDE"))
	if stride <= 0 {
		stride = 64
	}
	serve := func(c *floorConn) {
		pacers[int(next.Add(1))%len(pacers)].add(c)
		buf := make([]byte, 0, 2048)
		state := make([]byte, ballast)
		for {
			var err error
			if buf, err = c.read(buf); err != nil {
				return
			}
			for i := 0; i < len(state); i += stride {
				state[i]++
			}
			frames.Add(1)
		}
	}
	var addr string
	var closeAll func()
	switch mode {
	case "calls-tcp":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr, closeAll = ln.Addr().String(), func() { ln.Close() }
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go serve(tcpEnd(c))
			}
		}()
	case "calls-websocket":
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			serve(wsEnd(c))
		}))
		addr, closeAll = srv.Listener.Addr().String(), srv.CloseClientConnections
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	fmt.Printf("ADDR %s\n", addr)
	var start time.Duration
	var read int64
	stopProfile := func() {}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "START":
			start, read = rusageCPU(), frames.Load()
			if p := os.Getenv("FRONTDOOR_FLOOR_CPUPROFILE"); p != "" {
				// The peer's profile over the measured window, to
				// set beside the server's (serve -cpuprofile).
				f, err := os.Create(p)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
			}
		case "STOP":
			stopProfile()
			fmt.Printf("CPU %d %d\n", rusageCPU()-start, frames.Load()-read)
			stopPacers(pacers)
			closeAll()
			return nil
		}
	}
	return in.Err()
}

// floorCalls runs n calls against a peer process and reports the metrics.
func floorCalls(b *testing.B, mode string, n int) {
	_, ctl, lines, addr := startPeer(b, floorPeerEnv+"=calls-"+mode)

	var measuring atomic.Bool
	gaps := make([][]time.Duration, n)
	var readers sync.WaitGroup
	pacers := newFloorPacers(runtime.GOMAXPROCS(0))
	conns := make([]*floorConn, n)
	for i := range conns {
		c, err := dialFloor(mode, addr)
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
		pacers[i%len(pacers)].add(c)
		gaps[i] = make([]time.Duration, 0, int(floorCallsFor/floorCallsGap)+100)
		readers.Go(func() {
			buf := make([]byte, 0, 2048)
			var last time.Time
			for {
				var err error
				if buf, err = c.read(buf); err != nil {
					return
				}
				now := time.Now()
				if measuring.Load() && !last.IsZero() && len(gaps[i]) < cap(gaps[i]) {
					gaps[i] = append(gaps[i], (now.Sub(last) - floorCallsGap).Abs())
				}
				last = now
			}
		})
	}
	time.Sleep(time.Second) // warm-up: every call streaming both ways
	fmt.Fprintln(ctl, "START")
	self := rusageCPU()
	measuring.Store(true)
	time.Sleep(floorCallsFor)
	measuring.Store(false)
	self = rusageCPU() - self
	fmt.Fprintln(ctl, "STOP")
	var peer time.Duration
	var peerRead int64 // the caller frames the server read while measured
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "CPU "); ok {
			if _, err := fmt.Sscan(v, &peer, &peerRead); err != nil {
				b.Fatalf("peer: %q: %v", v, err)
			}
			break
		}
	}
	stopPacers(pacers)
	for _, c := range conns {
		c.close()
	}
	readers.Wait()

	var all []time.Duration
	for _, g := range gaps {
		all = append(all, g...)
	}
	if len(all) == 0 || peer == 0 {
		b.Fatalf("%d gaps, peer CPU %v: the run measured nothing", len(all), peer)
	}
	slices.Sort(all)
	callSeconds := float64(n) * floorCallsFor.Seconds()
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(peer)/callSeconds, "server-ms/call-s")
	b.ReportMetric(ms(self)/callSeconds, "gen-ms/call-s")
	b.ReportMetric(ms(all[len(all)/2]), "jitter-p50-ms")
	b.ReportMetric(ms(all[len(all)*99/100]), "jitter-p99-ms")
	b.ReportMetric(float64(len(all))/callSeconds, "frames/call-s")
	// Per frame moved: each process wrote one and read the other.
	moved := float64(len(all) + int(peerRead))
	b.ReportMetric(float64(peer.Microseconds())/moved, "server-µs/frame")
	b.ReportMetric(float64(self.Microseconds())/moved, "gen-µs/frame")
}

func dialFloor(mode, addr string) (*floorConn, error) {
	if mode == "tcp" {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return tcpEnd(c), nil
	}
	c, _, err := websocket.Dial(context.Background(), "ws://"+addr, nil)
	if err != nil {
		return nil, err
	}
	return wsEnd(c), nil
}

// floorCallsN is the numbers of calls to run: FRONTDOOR_FLOOR_CALLS
// ("100 500"), or 100, 500 and 1,000.
func floorCallsN() []int {
	var ns []int
	for _, f := range strings.Fields(os.Getenv("FRONTDOOR_FLOOR_CALLS")) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		ns = []int{100, 500, 1000}
	}
	return ns
}
