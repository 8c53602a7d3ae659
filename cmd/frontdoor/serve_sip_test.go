package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/media/sip"
	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
)

// TestReadSIPAuth: the auth file's realm line and user lines, comments and
// blank lines; each bad line is refused with its number and a typed error.
func TestReadSIPAuth(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		realm string
		users map[string]sip.User
		line  int   // of the error; -1: no error
		err   error // wrapped by the error
	}{
		{"users and a trunk", "# frontdoor's callers\n\nrealm frontdoor.example\nalice s3cret acme\n  # the PBX\npbx trunkpw\n",
			"frontdoor.example", map[string]sip.User{"alice": {Password: "s3cret", Tenant: "acme"}, "pbx": {Password: "trunkpw"}}, -1, nil},
		{"tabs and spaces", "realm\tr\n\talice  pw \t acme \n", "r", map[string]sip.User{"alice": {Password: "pw", Tenant: "acme"}}, -1, nil},
		{"no realm line", "alice pw acme\n", "", nil, 1, errSIPAuthRealm},
		{"realm without a name", "realm\nalice pw\n", "", nil, 1, errSIPAuthRealm},
		{"realm with a quote", "realm fr\"ont\nalice pw\n", "", nil, 1, errSIPAuthRealm},
		{"user without a password", "realm r\n\nalice\n", "", nil, 3, errSIPAuthFields},
		{"too many fields", "realm r\nalice pw acme extra\n", "", nil, 2, errSIPAuthFields},
		{"user with a colon", "realm r\nal:ice pw\n", "", nil, 2, errSIPAuthUser},
		{"user twice", "realm r\nalice pw\n# again\nalice other\n", "", nil, 4, errSIPAuthDup},
		{"bad tenant", "realm r\nalice pw ac/me\n", "", nil, 2, errSIPAuthTenant},
		{"no users", "# empty\nrealm r\n", "", nil, 0, errSIPAuthEmpty},
		{"empty file", "", "", nil, 0, errSIPAuthRealm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := readSIPAuth(strings.NewReader(tt.file), "users.txt")
			if tt.line < 0 {
				if err != nil {
					t.Fatal(err)
				}
				if a.Realm != tt.realm || len(a.Users) != len(tt.users) {
					t.Fatalf("auth %+v, want realm %q and %d users", a, tt.realm, len(tt.users))
				}
				for name, u := range tt.users {
					if a.Users[name] != u {
						t.Errorf("user %s: %+v, want %+v", name, a.Users[name], u)
					}
				}
				return
			}
			var fe *SIPAuthFileError
			if !errors.As(err, &fe) || fe.Line != tt.line || fe.Path != "users.txt" || !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want line %d wrapping %v", err, tt.line, tt.err)
			}
			if want := fmt.Sprintf("users.txt:%d:", tt.line); tt.line > 0 && !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		})
	}
}

// TestSIPFlags: what serve refuses and warns about before it listens.
func TestSIPFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	writeFile(t, good, "realm r\nalice pw acme\n")
	bad := filepath.Join(dir, "bad")
	writeFile(t, bad, "realm r\nalice\n")
	tests := []struct {
		name string
		set  sipSettings
		ok   bool
		err  string // in the error; "" for none
		warn bool
	}{
		{"off", sipSettings{}, false, "", false},
		{"auth file without a listener", sipSettings{authFile: good}, false, "need -sip-listen", false},
		{"loopback", sipSettings{listen: "127.0.0.1:5060"}, true, "", false},
		{"public without auth", sipSettings{listen: "192.0.2.1:5060"}, true, "", true},
		{"public with auth", sipSettings{listen: "192.0.2.1:5060", authFile: good}, true, "", false},
		{"every address needs a media IP", sipSettings{listen: "0.0.0.0:5060", authFile: good}, false, "-sip-media-ip", false},
		{"every address with a media IP", sipSettings{listen: "0.0.0.0:5060", authFile: good, mediaIP: "192.0.2.1"}, true, "", false},
		{"host name", sipSettings{listen: "localhost:5060"}, false, "want ip:port", false},
		{"bad media IP", sipSettings{listen: "127.0.0.1:5060", mediaIP: "nowhere"}, false, "-sip-media-ip", false},
		{"missing auth file", sipSettings{listen: "127.0.0.1:5060", authFile: filepath.Join(dir, "none")}, false, "no such file", false},
		{"bad auth file", sipSettings{listen: "127.0.0.1:5060", authFile: bad}, false, bad + ":2:", false},
		{"no pending INVITE", sipSettings{listen: "127.0.0.1:5060", pendingPerAddr: -1}, false, "-sip-pending-per-addr", false},
		{"no TCP connection", sipSettings{listen: "127.0.0.1:5060", tcpPerAddr: -1}, false, "-sip-tcp-per-addr", false},
		{"no idle time", sipSettings{listen: "127.0.0.1:5060", tcpIdle: -1}, false, "-sip-tcp-idle", false},
		{"retry at once", sipSettings{listen: "127.0.0.1:5060", retryAfter: time.Millisecond}, false, "-sip-retry-after", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			log, _ := newLogger("text", "info", false, &logs)
			// The flags' defaults, and what the case sets.
			set := sipFlags(flag.NewFlagSet("serve", flag.ContinueOnError))
			set.listen, set.authFile, set.mediaIP = tt.set.listen, tt.set.authFile, tt.set.mediaIP
			for _, f := range []struct {
				to *int
				v  int
			}{{&set.pendingPerAddr, tt.set.pendingPerAddr}, {&set.tcpPerAddr, tt.set.tcpPerAddr}} {
				if f.v != 0 {
					*f.to = f.v
				}
			}
			if tt.set.tcpIdle != 0 {
				set.tcpIdle = tt.set.tcpIdle
			}
			if tt.set.retryAfter != 0 {
				set.retryAfter = tt.set.retryAfter
			}
			cfg, ok, err := set.config(log)
			if ok != tt.ok || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("config: ok %v, error %v; want ok %v, error with %q", ok, err, tt.ok, tt.err)
			}
			if warned := strings.Contains(logs.String(), "WRN"); warned != tt.warn {
				t.Errorf("warned %v, want %v: %s", warned, tt.warn, logs.String())
			}
			if ok && (tt.set.authFile != "") != (cfg.Auth != nil) {
				t.Errorf("auth %+v with -sip-auth-file %q", cfg.Auth, tt.set.authFile)
			}
		})
	}
}

// sipLogs follows a serve process's log lines.
type sipLogs struct {
	p    *proc
	seen []map[string]any
}

// wait returns the first line (seen or to come) whose msg is msg and
// which ok accepts (nil: any).
func (l *sipLogs) wait(t *testing.T, d time.Duration, msg string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	match := func(m map[string]any) bool { return m["msg"] == msg && (ok == nil || ok(m)) }
	for _, m := range l.seen {
		if match(m) {
			return m
		}
	}
	deadline := time.After(d)
	for {
		select {
		case m, open := <-l.p.logs:
			if !open {
				t.Fatalf("serve exited before logging %q", msg)
			}
			l.seen = append(l.seen, m)
			if match(m) {
				return m
			}
		case <-deadline:
			t.Fatalf("serve did not log %q within %v", msg, d)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// stageLeased is the named stage's leases held, from /v1/stages.
func stageLeased(t *testing.T, p *proc, name string) int {
	t.Helper()
	var v struct {
		Stages []struct {
			Name   string
			Leased int
		}
	}
	getJSON(t, p.url("/v1/stages"), &v)
	for _, s := range v.Stages {
		if s.Name == name {
			return s.Leased
		}
	}
	t.Fatalf("no %s stage in /v1/stages", name)
	return 0
}

// TestServeSIPBaresip runs the real binary with -sip-listen and real SIP
// phones (baresip) calling it. The first caller is admitted: it says hello
// and hears the spoken reply (espeak-ng), recorded by the phone. With the
// one session slot held, a second caller is answered, hears the refusal
// prompt and the keypad menu, presses 1 (RFC 4733) and is booked a
// callback to its own number (in SQLite, listed on /v1/callbacks), and the
// server hangs up on it. The first caller's hang-up frees its session
// lease.
func TestServeSIPBaresip(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	p := startServe(t, nil, "-data-dir", data, "-sip-listen", "127.0.0.1:0", "-synth", "espeak", "-pace=true",
		"-session-slots", "1", "-session-queue", "1", "-session-max-wait", "300ms", "-stub-frame-count", "50")
	logs := &sipLogs{p: p}
	addr := logs.wait(t, 10*time.Second, "sip listening", nil)["addr"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hello, _ := filepath.Abs("../../media/testdata/hello-8k.wav")

	admitted := siptest.Start(t, siptest.Options{User: "alice", Source: hello})
	admitted.Command(ctx, "dial", fmt.Sprintf("sip:acme@%s", addr))
	admitted.WaitEvent(ctx, "CALL_ESTABLISHED")
	ans := logs.wait(t, 10*time.Second, "sip: call answered", nil)
	if ans["tenant"] != "acme" || ans["codec"] != "PCMU" {
		t.Errorf("answered %v", ans)
	}
	turn := logs.wait(t, 20*time.Second, "turn ended", nil)
	if turn["disposition"] != "completed" {
		t.Fatalf("the caller's turn: %v", turn)
	}
	if n := stageLeased(t, p, "session"); n != 1 {
		t.Fatalf("%d session leases with one caller in", n)
	}

	refused := siptest.Start(t, siptest.Options{User: "+15550100", Source: hello})
	refused.Command(ctx, "dial", fmt.Sprintf("sip:acme@%s", addr))
	refused.WaitEvent(ctx, "CALL_ESTABLISHED") // answered, not rejected
	logs.wait(t, 20*time.Second, "sip: keypad menu", nil)
	refused.Command(ctx, "sndcode", "1")
	out := logs.wait(t, 20*time.Second, "sip: keypad outcome", nil)
	if out["disposition"] != "queued" || out["kind"] != "callback" {
		t.Fatalf("keypad outcome %v", out)
	}
	refused.WaitEvent(ctx, "CALL_CLOSED") // the server's BYE, after the outcome was said
	var list struct {
		Callbacks []struct {
			Ref            string `json:"ticket"`
			Number, Status string
		}
	}
	getJSON(t, p.url("/v1/callbacks"), &list)
	cbs := list.Callbacks
	if len(cbs) != 1 || cbs[0].Ref != out["ticket"] || cbs[0].Status != "pending" {
		t.Fatalf("callbacks %+v, want the one booked (ticket %v)", cbs, out["ticket"])
	}
	store, err := fallback.OpenSQLite(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := store.Get(ctx, cbs[0].Ref)
	store.Close()
	if err != nil || cb.Number != "+15550100" {
		t.Fatalf("stored callback %+v (%v), want one to the caller's +15550100", cb, err)
	}
	prompt := refused.Recording(ctx)
	if loud := siptest.Loud(prompt.Samples, 1000); loud < time.Second {
		t.Errorf("the refused caller heard %v of speech in %v, want the prompt and the menu", loud, prompt.Duration())
	}

	admitted.Command(ctx, "hangup", "")
	admitted.WaitEvent(ctx, "CALL_CLOSED")
	waitFor(t, 10*time.Second, "the session lease released", func() bool { return stageLeased(t, p, "session") == 0 })
	reply := admitted.Recording(ctx)
	if loud := siptest.Loud(reply.Samples, 1000); loud < 500*time.Millisecond {
		t.Errorf("the admitted caller heard %v of speech in %v, want the spoken reply", loud, reply.Duration())
	}
	t.Logf("the admitted caller heard %v of speech in %v; the refused one %v in %v",
		siptest.Loud(reply.Samples, 1000), reply.Duration(), siptest.Loud(prompt.Samples, 1000), prompt.Duration())
}

// TestServeSIPp runs the real binary with -sip-listen and SIPp calling it
// as a trunk would test it. SIPp's standard uac call (INVITE, ACK, BYE)
// passes, three times; a caller that is answered and then sends no RTP
// is hung up with a BYE within 6 s (-sip-media-timeout 5s; the default,
// 30 s, is the flag's); and once
// serve drains (SIGTERM, with a call still in progress) SIPp's INVITEs
// are answered 503 with a Retry-After, so that a trunk fails over.
func TestServeSIPp(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "-sip-listen", "127.0.0.1:0", "-sip-media-timeout", sippMediaTimeout.String(), "-drain-timeout", "60s")
	logs := &sipLogs{p: p}
	addr := logs.wait(t, 10*time.Second, "sip listening", nil)["addr"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sippCalls(ctx, t, p, addr)
	sippDrain(ctx, t, p, logs, addr)
}

// sippMediaTimeout is the media timeout TestServeSIPp runs serve with:
// testdata/sipp/silent.xml waits for the BYE at most a second longer.
const sippMediaTimeout = 5 * time.Second

// sippCalls: SIPp's uac calls, and a silent one hung up in 5-6 s.
func sippCalls(ctx context.Context, t *testing.T, p *proc, addr string) {
	silentXML, _ := filepath.Abs("testdata/sipp/silent.xml")
	silent := make(chan error, 1)
	start := time.Now()
	go func() { silent <- siptest.SIPp(ctx, t, addr, "-sf", silentXML, "-m", "1") }()
	if err := siptest.SIPp(ctx, t, addr, "-sn", "uac", "-m", "3", "-d", "500"); err != nil {
		t.Errorf("SIPp's uac calls: %v", err)
	}
	if err := <-silent; err != nil {
		t.Errorf("the silent caller: %v", err)
	}
	elapsed := time.Since(start)
	if elapsed < sippMediaTimeout-time.Second {
		t.Errorf("the silent caller was hung up after %v, before the %v media timeout", elapsed, sippMediaTimeout)
	}
	t.Logf("the silent caller was hung up %v after SIPp started", elapsed)
	waitFor(t, 10*time.Second, "the session leases released", func() bool { return stageLeased(t, p, "session") == 0 })
}

// sippDrain: with a call in progress, SIGTERM; SIPp's INVITEs then get
// 503 with Retry-After.
func sippDrain(ctx context.Context, t *testing.T, p *proc, logs *sipLogs, addr string) {
	drainXML, _ := filepath.Abs("testdata/sipp/drain.xml")
	held, err := sip.Dial(ctx, "sip:acme@"+addr, sip.DialConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	waitFor(t, 10*time.Second, "the held call admitted", func() bool { return stageLeased(t, p, "session") == 1 })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	logs.wait(t, 10*time.Second, "draining", nil)
	waitFor(t, 10*time.Second, "/readyz to say draining", func() bool {
		res, err := http.Get(p.url("/readyz"))
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusServiceUnavailable
	})
	if err := siptest.SIPp(ctx, t, addr, "-sf", drainXML, "-m", "3"); err != nil {
		t.Errorf("SIPp's INVITEs during the drain: %v", err)
	}
	if err := held.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestServeSIPOverload503: with -sip-overload-503, an INVITE while the
// session stage has neither a slot nor a waiting place is answered 503
// with Retry-After (a trunk fails over) instead of being answered with
// the refusal prompt; once the slot is free, a call is answered again.
func TestServeSIPOverload503(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "-sip-listen", "127.0.0.1:0", "-sip-overload-503", "-sip-retry-after", "3s",
		"-session-slots", "1", "-session-queue", "1", "-session-max-wait", "10s")
	logs := &sipLogs{p: p}
	addr := logs.wait(t, 10*time.Second, "sip listening", nil)["addr"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var held []*sip.Outgoing
	defer func() {
		for _, o := range held {
			o.Close()
		}
	}()
	for i := range 2 { // the slot, then the waiting place
		o, err := sip.Dial(ctx, "sip:acme@"+addr, sip.DialConfig{})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		held = append(held, o)
	}
	waitFor(t, 10*time.Second, "the slot and the waiting place taken", func() bool {
		var v struct {
			Stages []struct {
				Name           string
				Leased, Queued int
			}
		}
		getJSON(t, p.url("/v1/stages"), &v)
		for _, s := range v.Stages {
			if s.Name == "session" {
				return s.Leased == 1 && s.Queued == 1
			}
		}
		return false
	})
	_, err := sip.Dial(ctx, "sip:acme@"+addr, sip.DialConfig{})
	if !errors.Is(err, sip.ErrRefused) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a call over the full session stage: %v, want 503", err)
	}
	res, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), `frontdoor_sip_refused_total{reason="busy"} 1`) {
		t.Errorf("/metrics does not count the refusal:\n%s", grepLines(string(body), "frontdoor_sip_"))
	}
	for _, o := range held {
		if err := o.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
	}
	held = nil
	waitFor(t, 10*time.Second, "the session stage empty", func() bool { return stageLeased(t, p, "session") == 0 })
	o, err := sip.Dial(ctx, "sip:acme@"+addr, sip.DialConfig{})
	if err != nil {
		t.Fatalf("a call once the stage has room: %v", err)
	}
	held = append(held, o)
}

// grepLines is the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServeSIPFlood: one address floods the binary's SIP port with its
// defaults: 2,000 TCP connections left idle (at most 32 kept, the rest
// reset, and the process's descriptors stay within that) and 1,100 INVITEs
// never acknowledged (16 answered, 1,084 answered 503); meanwhile callers
// from another address (127.0.0.2) are answered over UDP and TCP, and
// /healthz answers.
func TestServeSIPFlood(t *testing.T) {
	p := startServe(t, nil, "-sip-listen", "127.0.0.1:0")
	logs := &sipLogs{p: p}
	addr := logs.wait(t, 10*time.Second, "sip listening", nil)["addr"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()

	const flood = 2000
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			continue // reset before the handshake was through: refused too
		}
		conns = append(conns, c)
	}
	waitFor(t, 10*time.Second, "the TCP flood refused", func() bool {
		return metric(t, "http://"+p.addr, `frontdoor_sip_refused_total{reason="tcp"}`) >= flood-32
	})
	if n := fds() - before; n > 32+16 {
		t.Errorf("the process holds %d more descriptors after 2,000 connections from one address", n)
	}

	ua := siptest.NewRawUA(t, "127.0.0.1", netip.MustParseAddrPort(addr))
	codes := map[int]int{}
	for range 1100 {
		codes[ua.Final(ua.Send("INVITE", "", siptest.Offer(netip.AddrPortFrom(ua.Local().Addr(), 40000)))).StatusCode]++
	}
	if codes[200] != 16 || codes[503] != 1084 {
		t.Errorf("1,100 INVITEs never acknowledged got %v, want 16 × 200 and 1,084 × 503", codes)
	}

	for _, uri := range []string{"sip:acme@" + addr, "sip:acme@" + addr + ";transport=tcp"} {
		o, err := sip.Dial(ctx, uri, sip.DialConfig{LocalIP: netip.MustParseAddr("127.0.0.2")})
		if err != nil {
			t.Fatalf("a caller from 127.0.0.2 (%s) during the flood: %v", uri, err)
		}
		if err := o.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
	}
	res, err := http.Get(p.url("/healthz"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("/healthz during the flood: %s", res.Status)
	}
	t.Logf("descriptors: %d before the flood, %d after; INVITEs: %v", before, fds(), codes)
}
