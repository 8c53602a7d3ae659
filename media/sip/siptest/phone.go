// Package siptest drives real SIP peers for tests. A Phone is Debian's
// baresip: it starts one on loopback with a configuration folder of its
// own, dials through its ctrl_tcp command interface with a WAV file as the
// caller's audio, records what the phone receives (sndfile), and reports
// the phone's events. SIPp runs Debian's SIPp with a scenario, as a trunk
// would test a server; RawUA sends hand-written requests that no
// well-behaved client sends. Tests of media/sip, session/telephony and
// cmd/frontdoor share it.
package siptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/wav"
)

// Phone is a running baresip, controlled over its ctrl_tcp port. It is
// stopped when its test ends.
type Phone struct {
	t       testing.TB
	dir     string
	sipPort int
	cmd     *exec.Cmd
	ctrl    net.Conn
	out     *lockedBuffer
	exited  chan struct{}

	mu     sync.Mutex
	events []map[string]any
	notify chan struct{}
	resp   chan map[string]any
	readWG sync.WaitGroup
}

// Options configure a Phone.
type Options struct {
	User     string // the account's user name (From); default alice
	Password string // auth_pass, answered to a digest challenge
	Source   string // WAV file (8 kHz mono) sent as the caller's audio
	// Length is how long the phone sends audio: Source padded with
	// silence to it (default 60 s). baresip hangs up when its audio
	// source ends, so a call cannot outlast it.
	Length time.Duration
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort returns a port that baresip can take on loopback: free on UDP
// and TCP, with the port above it free too (baresip binds its SIP/TLS
// transport there), and below the kernel's ephemeral range (32768 and up),
// so that no connection of the test or of a parallel one is handed it
// between the check and baresip's bind.
func freePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		port := 10000 + rand.IntN(9000)
		if portFree(port) && portFree(port+1) {
			return port
		}
	}
	t.Fatal("siptest: no free port")
	return 0
}

func portFree(port int) bool {
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		return false
	}
	defer u.Close()
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Start starts baresip on loopback and connects to its control port. A
// missing binary fails the test (apt-get install baresip; .ci/test does).
// A phone that could not bind its ports (taken by another process between
// the check and baresip's bind) is started again on others.
func Start(t testing.TB, o Options) *Phone {
	t.Helper()
	bin, err := exec.LookPath("baresip")
	if err != nil {
		t.Fatalf("baresip is not installed (apt-get install baresip; .ci/test does): %v", err)
	}
	if o.User == "" {
		o.User = "alice"
	}
	for attempt := 1; ; attempt++ {
		p, err := try(t, bin, o)
		if err == nil {
			t.Cleanup(p.stop)
			p.readWG.Add(1)
			go p.read()
			return p
		}
		if attempt == 3 || !strings.Contains(p.out.String(), "Address already in use") {
			t.Fatalf("%v; baresip output:\n%s", err, p.out)
		}
		t.Logf("baresip attempt %d: %v, trying other ports", attempt, err)
	}
}

// try starts one baresip and waits for its control port; on an error the
// process has ended and p.out holds what it printed.
func try(t testing.TB, bin string, o Options) (*Phone, error) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o755); err != nil {
		t.Fatal(err)
	}
	source, err := padded(o.Source, o.Length, filepath.Join(dir, "source.wav"))
	if err != nil {
		t.Fatal(err)
	}
	sipPort, ctrlPort := freePort(t), freePort(t)
	for ctrlPort >= sipPort-1 && ctrlPort <= sipPort+1 {
		ctrlPort = freePort(t)
	}
	config := strings.Join([]string{
		"poll_method epoll",
		fmt.Sprintf("sip_listen 127.0.0.1:%d", sipPort),
		"net_interface 127.0.0.1",
		"audio_player alsa,null",
		"audio_alert alsa,null",
		"audio_source aufile," + source,
		"ausrc_srate 8000",
		"auplay_srate 8000",
		"ausrc_channels 1",
		"auplay_channels 1",
		"rtp_ports 20000-32000",
		"module_path /usr/lib/baresip/modules",
		"module g711.so",
		"module aufile.so",
		"module alsa.so",
		"module sndfile.so",
		"module_app account.so",
		"module_app menu.so",
		"module_app ctrl_tcp.so",
		fmt.Sprintf("ctrl_tcp_listen 127.0.0.1:%d", ctrlPort),
		"snd_path " + rec,
		"",
	}, "\n")
	account := fmt.Sprintf("<sip:%s@127.0.0.1>;regint=0", o.User)
	if o.Password != "" {
		account += fmt.Sprintf(";auth_user=%s;auth_pass=%s", o.User, o.Password)
	}
	for name, text := range map[string]string{"config": config, "accounts": account + "\n", "contacts": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := &Phone{t: t, dir: dir, sipPort: sipPort, out: &lockedBuffer{}, notify: make(chan struct{}, 1), resp: make(chan map[string]any, 1)}
	p.cmd = exec.Command(bin, "-4", "-f", dir)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start baresip: %v", err)
	}
	p.exited = make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ctrlPort))
		if err == nil {
			p.ctrl = c
			return p, nil
		}
		if time.Now().After(deadline) {
			p.kill()
			return p, fmt.Errorf("baresip control port: %w", err)
		}
		select {
		case <-p.exited:
			return p, errors.New("baresip exited at start")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// padded writes the WAV at src, padded with silence to length (default
// 60 s), to dst and returns dst.
func padded(src string, length time.Duration, dst string) (string, error) {
	a, err := wav.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("siptest: source: %w", err)
	}
	if length <= 0 {
		length = time.Minute
	}
	if n := int(int64(a.SampleRate)*int64(length)/int64(time.Second)) * max(a.Channels, 1); n > len(a.Samples) {
		a.Samples = append(a.Samples, make([]int16, n-len(a.Samples))...)
	}
	if err := wav.WriteFile(dst, a); err != nil {
		return "", fmt.Errorf("siptest: source: %w", err)
	}
	return dst, nil
}

func (p *Phone) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *Phone) stop() {
	if p.ctrl != nil {
		p.ctrl.Close()
	}
	p.kill()
	p.readWG.Wait()
	if p.t.Failed() {
		p.t.Logf("baresip output:\n%s", p.out)
	}
}

// read decodes the netstrings ctrl_tcp sends: command responses and events.
func (p *Phone) read() {
	defer p.readWG.Done()
	r := bufio.NewReader(p.ctrl)
	for {
		n, err := r.ReadString(':')
		if err != nil {
			return
		}
		size, err := strconv.Atoi(strings.TrimSuffix(n, ":"))
		if err != nil || size < 0 || size > 1<<20 {
			return
		}
		msg := make([]byte, size+1)
		if _, err := io.ReadFull(r, msg); err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(msg[:size], &m); err != nil {
			continue
		}
		if m["response"] == true {
			select {
			case p.resp <- m:
			default:
			}
			continue
		}
		p.mu.Lock()
		p.events = append(p.events, m)
		p.mu.Unlock()
		select {
		case p.notify <- struct{}{}:
		default:
		}
	}
}

// Command runs one ctrl_tcp command ("dial", "hangup", "sndcode", ...) and
// returns its response; a failed command fails the test.
func (p *Phone) Command(ctx context.Context, cmd, params string) map[string]any {
	p.t.Helper()
	body, _ := json.Marshal(map[string]string{"command": cmd, "params": params, "token": cmd})
	if _, err := fmt.Fprintf(p.ctrl, "%d:%s,", len(body), body); err != nil {
		p.t.Fatalf("baresip %s: %v", cmd, err)
	}
	select {
	case r := <-p.resp:
		if r["ok"] != true {
			p.t.Fatalf("baresip %s %s: %v", cmd, params, r)
		}
		return r
	case <-ctx.Done():
		p.t.Fatalf("baresip %s: no response: %v\n%s", cmd, ctx.Err(), p.out)
		return nil
	}
}

// WaitEvent waits for the first event of the given type (CALL_RINGING,
// CALL_ESTABLISHED, CALL_CLOSED, ...) and returns it; none before ctx ends
// fails the test.
func (p *Phone) WaitEvent(ctx context.Context, typ string) map[string]any {
	p.t.Helper()
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.events); seen++ {
			if p.events[seen]["type"] == typ {
				e := p.events[seen]
				p.mu.Unlock()
				return e
			}
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-ctx.Done():
			p.t.Fatalf("baresip: no %s event: %v\nevents: %v\n%s", typ, ctx.Err(), p.Events(), p.out)
			return nil
		}
	}
}

// Events lists the events so far, as "TYPE param".
func (p *Phone) Events() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		out = append(out, fmt.Sprint(e["type"], " ", e["param"]))
	}
	return out
}

// Recording reads the WAV sndfile wrote of the audio the phone received
// (once it holds samples); none before ctx ends fails the test.
func (p *Phone) Recording(ctx context.Context) *wav.Audio {
	p.t.Helper()
	for {
		files, _ := filepath.Glob(filepath.Join(p.dir, "rec", "*-dec.wav"))
		if len(files) == 1 {
			if a, err := wav.ReadFile(files[0]); err == nil && len(a.Samples) > 0 {
				return a
			}
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("baresip recorded nothing (files %v): %v", files, ctx.Err())
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// RMS is the root mean square of pcm (0 when empty).
func RMS(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// Loud is how long pcm (8 kHz) has 20 ms windows whose RMS is over min.
func Loud(pcm []int16, min float64) time.Duration {
	const window = 160
	var n int
	for i := 0; i+window <= len(pcm); i += window {
		if RMS(pcm[i:i+window]) > min {
			n++
		}
	}
	return time.Duration(n) * 20 * time.Millisecond
}
