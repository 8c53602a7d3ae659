package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/frontdoorhq/frontdoor/session/guard"
)

// fromAddr is an HTTP client and WebSocket dialer whose connections come
// from the loopback address ip (all of 127/8 is local on Linux): a test
// can play several source addresses against one server.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// getWithin fetches url and reports its status, failing after limit.
func getWithin(c *http.Client, url string, limit time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// probe asks url as an orchestrator's health probe does: each attempt
// within a second, and only failureThreshold failures in a row (a
// kubelet's default, 3) count as down. On a loaded 2-core machine under
// -race a single attempt at the flood's peak may miss its second; a
// starved /healthz misses all three. It returns the last attempt's answer
// and how many attempts it took.
func probe(c *http.Client, url string) (code, attempts int, err error) {
	const failureThreshold = 3
	for attempts = 1; ; attempts++ {
		code, err = getWithin(c, url, time.Second)
		if err == nil && code == http.StatusOK || attempts == failureThreshold {
			return code, attempts, err
		}
	}
}

// flood holds up to n connections from ip to addr until stop: half send an
// unauthenticated WebSocket upgrade and never read the answer (idle
// keep-alive), half trickle headers they never finish (slowloris). Each
// one cut is redialled. It counts the answers it saw.
type flood struct {
	addr, ip string
	n        int

	dials, unauthorized, tooMany, served atomic.Int64
	cutAfter401                          atomic.Int64 // closed by the server after its 401
}

func (f *flood) run(stop <-chan struct{}) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(f.ip)}, Timeout: time.Second}
	var wg sync.WaitGroup
	for i := range f.n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f.dials.Add(1)
				c, err := d.Dial("tcp", f.addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				go func() { <-stop; c.Close() }()
				if i%2 == 0 {
					_, _ = c.Write([]byte("GET /v1/session HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nUpgrade: websocket\r\n" +
						"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"))
				} else {
					_, _ = c.Write([]byte("GET /v1/session HTTP/1.1\r\nHost: x\r\n"))
				}
				line, _ := bufio.NewReader(c).ReadString('\n')
				switch {
				case strings.Contains(line, " 401 "):
					f.unauthorized.Add(1)
				case strings.Contains(line, " 429 "):
					f.tooMany.Add(1)
				case line != "":
					f.served.Add(1)
				}
				// Hold the connection until the server cuts it.
				_, _ = io.Copy(io.Discard, c)
				c.Close()
				select {
				case <-stop:
				default:
					if strings.Contains(line, " 401 ") {
						f.cutAfter401.Add(1)
					}
				}
				// Redial, not in a tight loop: the test (under -race) shares
				// two cores with the server. What matters is the 1,000
				// connections held or attempted at once, not the dial rate.
				select {
				case <-stop:
				case <-time.After(time.Second):
				}
			}
		})
	}
	wg.Wait()
}

// TestSecurityFloodFromOneAddress: one address without credentials opens
// 1,000 connections (idle keep-alives after their 401, and slowloris
// handshakes), redialling each one cut. Throughout, a caller with a valid
// token is admitted within 3 s and /healthz answers 200 within 1 s (of
// at most three probes). The flood's 401s end their connections, and past
// the per-address caps it gets 429.
func TestSecurityFloodFromOneAddress(t *testing.T) {
	secret := strings.Repeat("fl00d-", 7)
	p := startServe(t, []string{"FD_TEST_SECRET=" + secret}, "-auth", "jwt", "-jwt-secret-env", "FD_TEST_SECRET", "-allow-open-gateways")
	j := &guard.JWT{Secret: []byte(secret)}
	tok, err := j.Sign(guard.Claims{Tenant: "acme", Roles: []string{"caller"},
		RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}})
	if err != nil {
		t.Fatal(err)
	}

	f := &flood{addr: p.addr, ip: "127.0.0.2", n: 1000}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { f.run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	began := time.Now()
	waitFor(t, 20*time.Second, "the flood to reach the per-address caps", func() bool { return f.tooMany.Load() > 0 })

	t.Logf("per-address cap reached after %v", time.Since(began))
	health := fromAddr("127.0.0.1")
	caller := fromAddr("127.0.0.3")
	for i := range 10 {
		t0 := time.Now()
		code, tries, err := probe(health, p.url("/healthz"))
		if err != nil || code != 200 {
			t.Fatalf("round %d: /healthz during the flood, %d probes of 1 s: %d %v", i, tries, code, err)
		}
		// The caller's whole dial and admission within 3 s: under -race,
		// beside other packages' tests, 1 s was missed at the flood's peak.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, _, err := websocket.Dial(ctx, p.ws("/v1/session"), &websocket.DialOptions{HTTPClient: caller, HTTPHeader: bearer(tok)})
		if err != nil {
			cancel()
			t.Fatalf("round %d: a valid caller during the flood: %v", i, err)
		}
		_, b, err := c.Read(ctx)
		cancel()
		c.CloseNow()
		if err != nil || !strings.Contains(string(b), `"admitted"`) {
			t.Fatalf("round %d: a valid caller during the flood: %s %v", i, b, err)
		}
		t.Logf("round %d: health (%d probes) and caller in %v", i, tries, time.Since(t0))
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("flood: %d dials, %d answered 401 (%d of them then closed by the server), %d answered 429, %d other",
		f.dials.Load(), f.unauthorized.Load(), f.cutAfter401.Load(), f.tooMany.Load(), f.served.Load())
	if f.unauthorized.Load() == 0 || f.cutAfter401.Load() == 0 || f.served.Load() != 0 {
		t.Fatalf("flood answers: 401 %d, other %d; want 401s and nothing else admitted", f.unauthorized.Load(), f.served.Load())
	}
}

// TestSecurityHealthOverFullServer: callers (from several addresses, each
// under its own cap) fill -max-conns; /healthz and /readyz are still
// answered 200 on the probe budget, while a caller gets 503.
func TestSecurityHealthOverFullServer(t *testing.T) {
	p := startServe(t, nil, "-max-conns", "20")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range 20 {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i%5))}}
		c, err := d.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The server has counted them once a request on another connection is
	// refused.
	caller := fromAddr("127.0.0.3")
	waitFor(t, 5*time.Second, "the server to be full", func() bool {
		code, err := getWithin(caller, p.url("/v1/session"), time.Second)
		return err == nil && code == http.StatusServiceUnavailable
	})
	health := fromAddr("127.0.0.4")
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, err := getWithin(health, p.url(path), time.Second); err != nil || code != 200 {
			t.Fatalf("%s on a full server: %d %v", path, code, err)
		}
	}
}

// TestSecurityHealthListenerUnderFlood: a flood from 12 addresses
// (127.0.0.2 to 127.0.0.13, 100 connections each) takes the public
// listener's probe budget, which every address shares; /healthz and
// /readyz on -health-listen answer 40 of 40 within 1 s meanwhile, and the
// health listener serves nothing else.
func TestSecurityHealthListenerUnderFlood(t *testing.T) {
	secret := strings.Repeat("fl00d-", 7)
	p := startServe(t, []string{"FD_TEST_SECRET=" + secret}, "-auth", "jwt", "-jwt-secret-env", "FD_TEST_SECRET", "-allow-open-gateways",
		"-health-listen", "127.0.0.1:0")
	var healthAddr string
	deadline := time.After(5 * time.Second)
	for healthAddr == "" {
		select {
		case m := <-p.logs:
			if m["msg"] == "health listening" {
				healthAddr = m["addr"].(string)
			}
		case <-deadline:
			t.Fatal("no health listener")
		}
	}
	floods := make([]*flood, 12)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range floods {
		floods[i] = &flood{addr: p.addr, ip: fmt.Sprintf("127.0.0.%d", 2+i), n: 100}
		wg.Go(func() { floods[i].run(stop) })
	}
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, 20*time.Second, "every flooding address to reach its caps", func() bool {
		for _, f := range floods {
			if f.tooMany.Load() == 0 {
				return false
			}
		}
		return true
	})
	health := fromAddr("127.0.0.1")
	public := 0
	for i := range 40 {
		path := "/healthz"
		if i%2 == 1 {
			path = "/readyz"
		}
		if code, err := getWithin(health, "http://"+healthAddr+path, time.Second); err != nil || code != 200 {
			t.Fatalf("round %d: %s on the health listener during the flood: %d %v", i, path, code, err)
		}
		if code, err := getWithin(health, p.url("/healthz"), time.Second); err == nil && code == 200 {
			public++
		}
	}
	t.Logf("during the flood: health listener 40 of 40; public listener's /healthz %d of 40", public)
	if code, err := getWithin(health, "http://"+healthAddr+"/v1/stages", time.Second); err != nil || code != http.StatusNotFound {
		t.Fatalf("/v1/stages on the health listener: %d %v, want 404", code, err)
	}
}
