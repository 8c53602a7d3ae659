package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/redisstage"
	"github.com/frontdoorhq/frontdoor/stages/redisstage/redistest"
)

// replica is one frontdoor serve process of a fleet test.
type replica struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error
}

func startReplica(t testing.TB, bin string, args ...string) *replica {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "-listen", "127.0.0.1:0", "-log-format", "json",
		"-data-dir", t.TempDir()}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	var mu sync.Mutex
	var logTail []string // the replica's last log lines, for a failure report
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logTail = append(logTail, sc.Text())
			if len(logTail) > 20 {
				logTail = logTail[1:]
			}
			mu.Unlock()
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "listening" {
				a, _ := m["addr"].(string)
				addr <- a
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		r.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.exited
	})
	select {
	case r.addr = <-addr:
	case <-time.After(45 * time.Second): // three replicas start at once on two loaded cores
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("replica did not listen; its log:\n%s", strings.Join(logTail, "\n"))
	}
	return r
}

func (r *replica) get(t *testing.T, path string) int {
	t.Helper()
	resp, err := http.Get("http://" + r.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func waitReady(t *testing.T, want int, rs ...*replica) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range rs {
		for r.get(t, "/readyz") != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s /readyz never %d", r.addr, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// fleetCall is one caller speaking the session protocol.
type fleetCall struct {
	conn *websocket.Conn
	ctx  context.Context
}

// dialCall dials a call; a replica that sheds the handshake itself (503:
// its own connection guard) returns nil and the status.
func dialCall(ctx context.Context, t testing.TB, r *replica) (*fleetCall, int) {
	c, resp, err := websocket.Dial(ctx, "ws://"+r.addr+"/v1/session", nil)
	if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
		return nil, resp.StatusCode
	}
	if err != nil {
		t.Error(err)
		return nil, 0
	}
	c.SetReadLimit(1 << 20)
	return &fleetCall{conn: c, ctx: ctx}, http.StatusSwitchingProtocols
}

// until reads until a text message of type typ (and, when given, one whose
// disposition is not "queued"), returning it and the messages before it.
func (c *fleetCall) until(typ string, final bool) (map[string]any, []map[string]any, error) {
	var seen []map[string]any
	for {
		mt, b, err := c.conn.Read(c.ctx)
		if err != nil {
			return nil, seen, err
		}
		if mt != websocket.MessageText {
			continue
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		seen = append(seen, m)
		if m["type"] == typ && (!final || m["disposition"] != "queued") {
			return m, seen, nil
		}
	}
}

func (c *fleetCall) turn(id string) (string, error) {
	if err := c.conn.Write(c.ctx, websocket.MessageText, []byte(`{"type":"turn","id":"`+id+`","text":"hello fleet"}`)); err != nil {
		return "", err
	}
	m, _, err := c.until("turn_end", false)
	if err != nil {
		return "", err
	}
	d, _ := m["disposition"].(string)
	return d, nil
}

// TestFleetOfThreeReplicas runs three frontdoor serve processes on one
// Redis: under concurrent callers spread over all three, the fleet never
// holds more session or model leases than its limits (sampled from Redis
// itself); with Redis stopped, new callers hear the truthful closed prompt
// and every /readyz is 503; with Redis back, calls are admitted again.
func TestFleetOfThreeReplicas(t *testing.T) {
	t.Parallel()
	start := time.Now()
	srv := redistest.Start(t)
	bin := buildOnce(t)
	sessionLim := stages.Limits{Slots: 4, Waiting: 4, MaxAge: 5 * time.Second}
	modelLim := stages.Limits{Slots: 2, Waiting: 8, MaxAge: 5 * time.Second}
	args := []string{"-store", srv.URL(0), "-store-lease-ttl", "1s", "-store-timeout", "300ms", "-drain-timeout", "1s",
		"-session-slots", "4", "-session-queue", "4", "-session-max-wait", "5s",
		"-model-slots", "2", "-model-queue", "8", "-model-max-wait", "5s",
		"-synth", "stub", "-recognize", "stub", "-stub-model-delay", "60ms", "-stub-token-delay", "1ms", "-stub-synth-delay", "1ms",
		"-stub-frame-delay", "0", "-stub-frame-count", "3", "-pace=false"}
	rs := []*replica{startReplica(t, bin, args...), startReplica(t, bin, args...), startReplica(t, bin, args...)}
	t.Logf("built and started: %v", time.Since(start))
	waitReady(t, 200, rs...) // the fleet warms up for one lease TTL on a fresh Redis

	// Sample the fleet's leases from Redis while the callers run.
	rdb := srv.Client(t)
	watch := func(name string, l stages.Limits) *redisstage.Store {
		st, err := redisstage.New(rdb, name, l, redisstage.Options{LeaseTTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	sessions, models := watch(session.StageSession, sessionLim), watch(session.StageModel, modelLim)
	var maxSession, maxModel atomic.Int64
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	sampled := make(chan error, 1)
	go func() {
		var err error
		for sampleCtx.Err() == nil && err == nil {
			for _, w := range []struct {
				st  *redisstage.Store
				max *atomic.Int64
			}{{sessions, &maxSession}, {models, &maxModel}} {
				sn, serr := w.st.FleetSnapshot(sampleCtx, time.Now())
				if serr != nil {
					continue
				}
				if int64(sn.Leased) > w.max.Load() {
					w.max.Store(int64(sn.Leased))
				}
				if sn.Leased > sn.Limits.Slots {
					err = fmt.Errorf("fleet holds %d leases, limit %d: %+v", sn.Leased, sn.Limits.Slots, sn)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		sampled <- err
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const callers = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, code := dialCall(ctx, t, rs[i%len(rs)])
			if c == nil {
				mu.Lock()
				outcomes["http "+strconv.Itoa(code)]++
				mu.Unlock()
				return
			}
			defer c.conn.CloseNow()
			m, _, err := c.until("session", true)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
				return
			}
			d, _ := m["disposition"].(string)
			if d == "admitted" {
				for j := range 3 {
					td, err := c.turn("t" + strconv.Itoa(j))
					if err != nil {
						t.Errorf("caller %d turn: %v", i, err)
						return
					}
					d += "," + td
				}
				_ = c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"hangup"}`))
			}
			mu.Lock()
			outcomes[d]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	stopSampling()
	if err := <-sampled; err != nil {
		t.Fatal(err)
	}
	t.Logf("outcomes %v; most leases seen: session %d, model %d", outcomes, maxSession.Load(), maxModel.Load())
	if maxSession.Load() != int64(sessionLim.Slots) || maxModel.Load() != int64(modelLim.Slots) {
		t.Fatalf("the load never filled the fleet: session %d, model %d", maxSession.Load(), maxModel.Load())
	}
	fs, err := models.FleetSnapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Check(); err != nil {
		t.Fatalf("fleet model ledger: %v (%+v)", err, fs)
	}

	// Redis stops: a new caller hears the truthful refusal, every replica
	// reports not ready.
	t.Logf("load done: %v", time.Since(start))
	srv.Stop()
	c, _ := dialCall(ctx, t, rs[1])
	if c == nil {
		t.Fatal("no call with Redis down")
	}
	m, seen, err := c.until("prompt", false)
	if err != nil {
		t.Fatal(err)
	}
	if m["reason"] != "closed" || m["stage"] != session.StageSession || m["text"] == "" {
		t.Fatalf("prompt with Redis down: %v", m)
	}
	if seen[0]["type"] != "session" || seen[0]["disposition"] != "closed" {
		t.Fatalf("caller with Redis down: %v", seen)
	}
	c.conn.CloseNow()
	waitReady(t, 503, rs...)

	// Redis back (empty: it kept nothing): the fleet warms up for one
	// lease TTL, then admits.
	t.Logf("refused with Redis down: %v", time.Since(start))
	srv.Restart()
	waitReady(t, 200, rs...)
	if c, _ = dialCall(ctx, t, rs[2]); c == nil {
		t.Fatal("no call after recovery")
	}
	if m, _, err := c.until("session", true); err != nil || m["disposition"] != "admitted" {
		t.Fatalf("after Redis came back: %v %v", m, err)
	}
	if d, err := c.turn("again"); err != nil || d != "completed" {
		t.Fatalf("turn after recovery: %s %v", d, err)
	}
	c.conn.CloseNow()

	t.Logf("recovered: %v", time.Since(start))
	for _, r := range rs {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, r := range rs {
		select {
		case err := <-r.exited:
			if err != nil {
				t.Errorf("replica exit: %v", err)
			}
			r.exited <- err // for the cleanup
		case <-time.After(10 * time.Second):
			t.Error("replica did not exit after SIGTERM")
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// modelAdmitted reads until the model stage's disposition is admitted (or
// another final one), returning it.
func (c *fleetCall) modelAdmitted() (string, error) {
	for {
		m, _, err := c.until("disposition", true)
		if err != nil {
			return "", err
		}
		if m["stage"] == session.StageModel {
			d, _ := m["disposition"].(string)
			return d, nil
		}
	}
}

// TestFleetKilledReplicaLeases kills with SIGKILL a frontdoor serve replica
// holding every model lease of the fleet (its model never answers). Its
// leases stay held, sampled from Redis, until their TTL runs out on the
// server's clock — never before: a caller on the surviving replica waits
// in the queue meanwhile (capacity reduced, not over-admitted) — and then
// the survivor admits it.
func TestFleetKilledReplicaLeases(t *testing.T) {
	t.Parallel()
	start := time.Now()
	srv := redistest.Start(t)
	bin := buildOnce(t)
	const ttl = 2 * time.Second
	modelLim := stages.Limits{Slots: 2, Waiting: 2, MaxAge: 20 * time.Second}
	args := []string{"-store", srv.URL(0), "-store-lease-ttl", ttl.String(), "-store-timeout", "500ms", "-drain-timeout", "1s",
		"-session-slots", "4", "-session-queue", "4", "-session-max-wait", "20s",
		"-model-slots", "2", "-model-queue", "2", "-model-max-wait", "20s",
		"-synth", "stub", "-recognize", "stub", "-stub-model-delay", "1h", "-pace=false"}
	doomed, survivor := startReplica(t, bin, args...), startReplica(t, bin, args...)
	waitReady(t, 200, doomed, survivor)
	t.Logf("built and started: %v", time.Since(start))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range modelLim.Slots {
		c, _ := dialCall(ctx, t, doomed)
		if c == nil {
			t.Fatal("no call on the doomed replica")
		}
		defer c.conn.CloseNow()
		if m, _, err := c.until("session", true); err != nil || m["disposition"] != "admitted" {
			t.Fatalf("session: %v %v", m, err)
		}
		if err := c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"turn","id":"t`+strconv.Itoa(i)+`","text":"hold"}`)); err != nil {
			t.Fatal(err)
		}
		if d, err := c.modelAdmitted(); err != nil || d != "admitted" {
			t.Fatalf("model on the doomed replica: %s %v", d, err)
		}
	}
	rdb := srv.Client(t)
	models, err := redisstage.New(rdb, session.StageModel, modelLim, redisstage.Options{LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if sn, err := models.FleetSnapshot(ctx, time.Now()); err != nil || sn.Leased != modelLim.Slots {
		t.Fatalf("before the kill: %+v %v", sn, err)
	}

	if err := doomed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The dead replica's last renewals set these expiries (server ms).
	exp, err := rdb.ZRangeWithScores(ctx, "fd:{"+session.StageModel+"}:lease", 0, 0).Result()
	if err != nil || len(exp) != 1 {
		t.Fatalf("lease expiries: %v %v", exp, err)
	}
	earliest := time.UnixMilli(int64(exp[0].Score))

	// A caller on the survivor waits: the fleet's slots are still held.
	c, _ := dialCall(ctx, t, survivor)
	if c == nil {
		t.Fatal("no call on the survivor")
	}
	defer c.conn.CloseNow()
	if m, _, err := c.until("session", true); err != nil || m["disposition"] != "admitted" {
		t.Fatalf("survivor session: %v %v", m, err)
	}
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"turn","id":"s1","text":"after"}`)); err != nil {
		t.Fatal(err)
	}
	admitted := make(chan string, 1)
	go func() {
		d, err := c.modelAdmitted()
		if err != nil {
			d = err.Error()
		}
		admitted <- d
	}()

	// Sample the fleet until the leases are back: no sample may show a
	// free slot while the server's clock is before the earliest expiry.
	held := 0 // samples after the kill that still showed every lease
	for {
		sn, err := models.FleetSnapshot(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		now, err := rdb.Time(ctx).Result() // read after the snapshot
		if err != nil {
			t.Fatal(err)
		}
		if sn.Leased == modelLim.Slots {
			held++
		} else if now.Before(earliest) {
			t.Fatalf("a lease came back by server time %v, before its expiry %v: %+v", now, earliest, sn)
		}
		if sn.Ledger.Lost >= uint64(modelLim.Slots) {
			break
		}
		if time.Since(killed) > 3*ttl {
			t.Fatalf("leases not back 3 TTLs after the kill: %+v", sn)
		}
		time.Sleep(20 * time.Millisecond)
	}
	back := time.Since(killed)
	if held == 0 {
		t.Fatal("no sample saw the dead replica's leases held")
	}
	select {
	case d := <-admitted:
		if d != "admitted" {
			t.Fatalf("survivor's model turn: %s", d)
		}
	case <-time.After(3 * ttl):
		t.Fatal("the survivor did not admit once the leases came back")
	}
	fs, err := models.FleetSnapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if fs.Leased != 1 || fs.Ledger.Lost != uint64(modelLim.Slots) {
		t.Fatalf("after: %+v", fs)
	}
	if err := fs.Check(); err != nil {
		t.Fatalf("fleet ledger: %v (%+v)", err, fs.Ledger)
	}
	t.Logf("leases back %v after the kill (TTL %v, %d samples held); total %v", back, ttl, held, time.Since(start))
	c.conn.CloseNow()
}
