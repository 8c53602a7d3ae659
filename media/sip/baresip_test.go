package sip

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

// baresip is a real SIP phone (Debian's baresip) driven over its ctrl_tcp
// command interface: it dials with an aufile audio source and records what
// it receives with sndfile.
type baresip struct {
	t       *testing.T
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

type baresipOptions struct {
	User     string // the account's user name; default alice
	Password string // auth_pass, answered to a digest challenge
	Source   string // WAV (8 kHz mono) sent as the caller's audio
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
func freePort(t *testing.T) int {
	t.Helper()
	for range 200 {
		port := 10000 + rand.IntN(9000)
		if portFree(port) && portFree(port+1) {
			return port
		}
	}
	t.Fatal("no free port")
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

// startBaresip starts baresip on loopback with a config folder of its own
// and connects to its control port. A missing binary fails the test. A
// phone that could not bind its ports (taken by another process between
// freePort's check and baresip's bind) is started again on others.
func startBaresip(t *testing.T, o baresipOptions) *baresip {
	t.Helper()
	bin, err := exec.LookPath("baresip")
	if err != nil {
		t.Fatalf("baresip is not installed (apt-get install baresip; .ci/test does): %v", err)
	}
	if o.User == "" {
		o.User = "alice"
	}
	for attempt := 1; ; attempt++ {
		b, err := tryBaresip(t, bin, o)
		if err == nil {
			t.Cleanup(b.stop)
			b.readWG.Add(1)
			go b.read()
			return b
		}
		if attempt == 3 || !strings.Contains(b.out.String(), "Address already in use") {
			t.Fatalf("%v; baresip output:\n%s", err, b.out)
		}
		t.Logf("baresip attempt %d: %v, trying other ports", attempt, err)
	}
}

// tryBaresip starts one baresip and waits for its control port; on an
// error the process has ended and b.out holds what it printed.
func tryBaresip(t *testing.T, bin string, o baresipOptions) (*baresip, error) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o755); err != nil {
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
		"audio_source aufile," + o.Source,
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
	b := &baresip{t: t, dir: dir, sipPort: sipPort, out: &lockedBuffer{}, notify: make(chan struct{}, 1), resp: make(chan map[string]any, 1)}
	b.cmd = exec.Command(bin, "-4", "-f", dir)
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start baresip: %v", err)
	}
	b.exited = make(chan struct{})
	go func() {
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ctrlPort))
		if err == nil {
			b.ctrl = c
			return b, nil
		}
		if time.Now().After(deadline) {
			b.kill()
			return b, fmt.Errorf("baresip control port: %w", err)
		}
		select {
		case <-b.exited:
			return b, errors.New("baresip exited at start")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *baresip) kill() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

func (b *baresip) stop() {
	if b.ctrl != nil {
		b.ctrl.Close()
	}
	b.kill()
	b.readWG.Wait()
	if b.t.Failed() {
		b.t.Logf("baresip output:\n%s", b.out)
	}
}

// read decodes the netstrings ctrl_tcp sends: command responses and events.
func (b *baresip) read() {
	defer b.readWG.Done()
	r := bufio.NewReader(b.ctrl)
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
			case b.resp <- m:
			default:
			}
			continue
		}
		b.mu.Lock()
		b.events = append(b.events, m)
		b.mu.Unlock()
		select {
		case b.notify <- struct{}{}:
		default:
		}
	}
}

// command runs one ctrl_tcp command and returns its response.
func (b *baresip) command(ctx context.Context, cmd, params string) map[string]any {
	b.t.Helper()
	body, _ := json.Marshal(map[string]string{"command": cmd, "params": params, "token": cmd})
	if _, err := fmt.Fprintf(b.ctrl, "%d:%s,", len(body), body); err != nil {
		b.t.Fatalf("baresip %s: %v", cmd, err)
	}
	select {
	case r := <-b.resp:
		if r["ok"] != true {
			b.t.Fatalf("baresip %s %s: %v", cmd, params, r)
		}
		return r
	case <-ctx.Done():
		b.t.Fatalf("baresip %s: no response: %v\n%s", cmd, ctx.Err(), b.out)
		return nil
	}
}

// waitEvent waits for an event of the given type (CALL_ESTABLISHED,
// CALL_CLOSED, ...) and returns it.
func (b *baresip) waitEvent(ctx context.Context, typ string) map[string]any {
	b.t.Helper()
	seen := 0
	for {
		b.mu.Lock()
		for ; seen < len(b.events); seen++ {
			if b.events[seen]["type"] == typ {
				e := b.events[seen]
				b.mu.Unlock()
				return e
			}
		}
		b.mu.Unlock()
		select {
		case <-b.notify:
		case <-ctx.Done():
			b.t.Fatalf("baresip: no %s event: %v\nevents: %v\n%s", typ, ctx.Err(), b.eventTypes(), b.out)
			return nil
		}
	}
}

func (b *baresip) eventTypes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.events {
		out = append(out, fmt.Sprint(e["type"], " ", e["param"]))
	}
	return out
}

// recording reads the WAV sndfile wrote of the audio baresip received.
func (b *baresip) recording(ctx context.Context) *wav.Audio {
	b.t.Helper()
	for {
		files, _ := filepath.Glob(filepath.Join(b.dir, "rec", "*-dec.wav"))
		if len(files) == 1 {
			if a, err := wav.ReadFile(files[0]); err == nil && len(a.Samples) > 0 {
				return a
			}
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("baresip recorded nothing (files %v): %v", files, ctx.Err())
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}
