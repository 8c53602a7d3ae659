package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// secBinary is the package's one build of frontdoor: every test that runs
// the binary (the security suite, serve, the fleet) shares it, as a link
// of the whole server takes seconds, and tens of them on a loaded machine.
var secBinary struct {
	once sync.Once
	path string
	err  error
	dir  string
}

func buildOnce(t testing.TB) string {
	t.Helper()
	buildBinary()
	if secBinary.err != nil {
		t.Fatal(secBinary.err)
	}
	return secBinary.path
}

// buildBinary builds the package's binary once; a caller that comes while
// the build runs waits for it.
func buildBinary() {
	secBinary.once.Do(func() {
		secBinary.dir, secBinary.err = os.MkdirTemp("", "frontdoor-sec-")
		if secBinary.err != nil {
			return
		}
		secBinary.path = filepath.Join(secBinary.dir, "frontdoor")
		out, err := exec.Command("go", "build", "-o", secBinary.path, ".").CombinedOutput()
		if err != nil {
			secBinary.err = &buildError{err, string(out)}
		}
	})
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// proc is a running `frontdoor serve`.
type proc struct {
	cmd    *exec.Cmd
	addr   string // public listener
	opAddr string // operator listener, when separate
	logs   chan map[string]any
	exited chan error

	rawMu sync.Mutex
	raw   []string // every stderr line as written, JSON or not
}

// lines returns every stderr line so far.
func (p *proc) lines() []string {
	p.rawMu.Lock()
	defer p.rawMu.Unlock()
	return append([]string(nil), p.raw...)
}

// quick stub timings: replies are short and fast unless a test says so.
var quickStubs = []string{"-synth", "stub", "-recognize", "stub", "-stub-model-delay", "1ms", "-stub-token-delay", "1ms", "-stub-synth-delay", "1ms",
	"-stub-frame-delay", "0", "-stub-frame-count", "3", "-pace=false"}

// startServe starts the binary on 127.0.0.1 with a free port and waits for
// it to listen. It is killed at the end of the test.
func startServe(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	bin := buildOnce(t)
	// A data directory of its own (a later -data-dir in args wins), so no
	// test writes into the source tree or shares another's callbacks.
	all := append([]string{"serve", "-listen", "127.0.0.1:0", "-log-format", "json", "-data-dir", t.TempDir()}, quickStubs...)
	all = append(all, args...)
	cmd := exec.Command(bin, all...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: make(chan map[string]any, 1024), exited: make(chan error, 1)}
	listening := make(chan map[string]any, 2)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.rawMu.Lock()
			p.raw = append(p.raw, sc.Text())
			p.rawMu.Unlock()
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if m["msg"] == "listening" || m["msg"] == "operator listening" {
				listening <- m
			}
			select {
			case p.logs <- m:
			default:
			}
		}
		p.exited <- cmd.Wait()
		close(p.logs)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	wantOp := false
	for _, a := range args {
		wantOp = wantOp || a == "-operator-listen"
	}
	deadline := time.After(20 * time.Second)
	for p.addr == "" || (wantOp && p.opAddr == "") {
		select {
		case m := <-listening:
			if m["msg"] == "listening" {
				p.addr = m["addr"].(string)
			} else {
				p.opAddr = m["addr"].(string)
			}
		case err := <-p.exited:
			p.exited <- err // for the cleanup, which waits for it
			t.Fatalf("serve exited before listening: %v", err)
		case <-deadline:
			t.Fatal("serve did not listen")
		}
	}
	return p
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }
func (p *proc) ws(path string) string  { return "ws://" + p.addr + path }

// dial opens a WebSocket; on a refused handshake it returns the response.
func dial(t *testing.T, url string, h http.Header, protos ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h, Subprotocols: protos})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if c != nil {
		c.SetReadLimit(1 << 20)
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, resp, err
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

// msg is any server message.
type msg struct {
	Type        string   `json:"type"`
	Disposition string   `json:"disposition"`
	Code        string   `json:"code"`
	Ref         string   `json:"ticket"`
	Position    int      `json:"position"`
	Kinds       []string `json:"kinds"`
	Turn        string   `json:"turn"`
	Stage       string   `json:"stage"`
	Text        string   `json:"text"`
}

// next reads text messages until one of type typ (binary frames skipped;
// typ "": the next text message).
func next(t *testing.T, c *websocket.Conn, typ string) msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		mt, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %q: %v", typ, err)
		}
		if mt != websocket.MessageText {
			continue
		}
		var m msg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("bad server message %s: %v", b, err)
		}
		if typ == "" || m.Type == typ {
			return m
		}
	}
}

func send(t *testing.T, c *websocket.Conn, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// closeCode reads until the connection ends and returns its close status.
func closeCode(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// stagesView fetches /v1/stages (with an optional operator token).
func stagesView(t *testing.T, base, tok string) map[string]map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/stages", nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/stages: %s", resp.Status)
	}
	var v struct {
		Calls  int              `json:"calls"`
		Stages []map[string]any `json:"stages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{"": {"calls": float64(v.Calls)}}
	for _, s := range v.Stages {
		out[s["name"].(string)] = s
	}
	return out
}

func ledger(s map[string]any) map[string]any { return s["ledger"].(map[string]any) }

func num(m map[string]any, k string) float64 {
	f, _ := m[k].(float64)
	return f
}

// waitFor polls cond for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
