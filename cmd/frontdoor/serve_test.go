package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestServeBinary starts the real binary as a new user would (flags, env
// and config file), holds a call, then sends SIGTERM: the server drains,
// refuses the next caller as closed, and exits 0 when the call ends.
func TestServeBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildOnce(t)
	cfg := filepath.Join(dir, "frontdoor.conf")
	writeFile(t, cfg, "# test settings\nmodel-slots = 3\nstub-model-delay = 5ms\n")
	cmd := exec.Command(bin, "serve", "-listen", "127.0.0.1:0", "-config", cfg, "-data-dir", filepath.Join(dir, "data"),
		"-synth", "stub", "-recognize", "stub", "-stub-token-delay", "1ms", "-stub-synth-delay", "1ms", "-stub-frame-delay", "0", "-stub-frame-count", "5")
	cmd.Env = append(os.Environ(), "FRONTDOOR_LOG_FORMAT=json", "FRONTDOOR_SYNTH_SLOTS=5")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case lines <- m:
				default:
				}
			}
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	defer func() { _ = cmd.Process.Kill() }()

	var addr string
	for m := range lines {
		if m["msg"] == "listening" {
			addr, _ = m["addr"].(string)
			break
		}
	}
	if addr == "" {
		t.Fatal("no listening line")
	}
	base := "http://" + addr
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	if code, body := get("/v1/stages"); code != 200 || !strings.Contains(body, `"slots": 3`) || !strings.Contains(body, `"slots": 5`) {
		t.Fatalf("stages %d %s", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "frontdoor_stage_slots") {
		t.Fatalf("metrics %d", code)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("/ %d", code)
	}
	if code, body := get("/v1/stages"); code != 200 || !strings.Contains(body, `"name": "callback"`) || !strings.Contains(body, `"name": "handoff"`) {
		t.Fatalf("fallback stages missing: %d %s", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/session", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	readUntil := func(c *websocket.Conn, typ string) map[string]any {
		for {
			mt, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if mt != websocket.MessageText {
				continue
			}
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			if m["type"] == typ {
				return m
			}
		}
	}
	call := dial()
	defer call.CloseNow()
	if m := readUntil(call, "session"); m["disposition"] != "admitted" {
		t.Fatalf("session %v", m)
	}
	_ = call.Write(ctx, websocket.MessageText, []byte(`{"type":"turn","id":"t1","text":"hello frontdoor"}`))
	if m := readUntil(call, "turn_end"); m["disposition"] != "completed" {
		t.Fatalf("turn_end %v", m)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := get("/readyz"); code != http.StatusServiceUnavailable; code, _ = get("/readyz") {
		if time.Now().After(deadline) {
			t.Fatal("readyz still 200 after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	late := dial()
	defer late.CloseNow()
	if m := readUntil(late, "session"); m["disposition"] != "closed" {
		t.Fatalf("caller during drain: %v", m)
	}
	// It is offered a callback (the fallback queues stay open during a
	// drain) and leaves without answering.
	readUntil(late, "prompt")
	late.CloseNow()
	_ = call.Write(ctx, websocket.MessageText, []byte(`{"type":"hangup"}`))
	_, _, _ = call.Read(ctx)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not exit after drain")
	}
	late.CloseNow()
	call.CloseNow()
	http.DefaultClient.CloseIdleConnections()
}
