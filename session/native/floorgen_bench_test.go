//go:build linux

package native_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// procCPU is pid's user and system CPU, from /proc.
func procCPU(b *testing.B, pid string) time.Duration {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return time.Duration(u+k) * 10 * time.Millisecond
}

// BenchmarkFloorGenerator drives a frontdoor server with the floor's own
// generator (BenchmarkFloorCalls: per call a reader, per core a ticker
// writing every call's next frame) instead of frontdoor load, so that the
// server and the floor are measured against the same peer: on loopback a
// write's system call carries the peer's receive and wake-up, and frontdoor
// load is not the floor's generator. Each call sends hello and one text
// turn, then 640 B every 20 ms while it reads its reply (FGEN_CALLS
// calls; the server at FGEN_ADDR, its pid FGEN_PID, started with the media
// benchmark's flags). The metric is the server's CPU (from /proc) per
// frame moved, as BenchmarkFloorCalls reports it. .ci/bench-floorgen runs
// it beside the floor.
func BenchmarkFloorGenerator(b *testing.B) {
	if os.Getenv("FGEN_ADDR") == "" {
		b.Skip("FGEN_ADDR, FGEN_PID and FGEN_CALLS name the server to drive (.ci/bench-floorgen)")
	}
	addr, pid := os.Getenv("FGEN_ADDR"), os.Getenv("FGEN_PID")
	n, _ := strconv.Atoi(os.Getenv("FGEN_CALLS"))
	pacers := newFloorPacers(2)
	var replies atomic.Int64
	var readers sync.WaitGroup
	ctx := context.Background()
	var conns []*websocket.Conn
	for i := range n {
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/session", nil)
		if err != nil {
			b.Fatal(err)
		}
		c.SetReadLimit(1 << 20)
		conns = append(conns, c)
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello"}`))
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"turn","id":"t`+strconv.Itoa(i)+`","text":"hello there"}`))
		fc := wsEnd(c)
		readers.Go(func() {
			buf := make([]byte, 0, 4096)
			for {
				typ, rd, err := c.Reader(ctx)
				if err != nil {
					return
				}
				if buf, err = readAll(rd, buf[:0]); err != nil {
					return
				}
				if typ == websocket.MessageBinary {
					replies.Add(1)
				}
			}
		})
		pacers[i%2].add(fc)
	}
	time.Sleep(2 * time.Second)
	cpu0, r0 := procCPU(b, pid), replies.Load()
	time.Sleep(10 * time.Second)
	cpu, r := procCPU(b, pid)-cpu0, replies.Load()-r0
	stopPacers(pacers)
	for _, c := range conns {
		c.CloseNow()
	}
	readers.Wait()
	sent := float64(n) * 10 * 50
	b.ReportMetric(float64(r)/float64(n)/10, "replies/call-s")
	b.ReportMetric(float64(cpu.Microseconds())/(float64(r)+sent), "server-µs/frame")
}
