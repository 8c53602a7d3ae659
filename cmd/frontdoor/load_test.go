package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/stages"
)

// TestLoadSmoke runs `frontdoor load` against an in-process server: the
// ledger balances and both report files are written and parse.
func TestLoadSmoke(t *testing.T) {
	defer goleak.VerifyNone(t)
	st := stub.Settings{ModelDelay: 20 * time.Millisecond, Tokens: 3, SynthDelay: 10 * time.Millisecond,
		FrameCount: 3, FrameDelay: 5 * time.Millisecond, CleanupDelay: 10 * time.Millisecond}
	model, synth := stub.NewModel(st), stub.NewSynthesizer(st)
	srv, err := server.New(server.Config{Config: session.Config{ModelBackend: model, Synthesizer: synth,
		Model:     stages.Limits{Slots: 2, Waiting: 2, MaxAge: 200 * time.Millisecond},
		Synthesis: stages.Limits{Slots: 2, Waiting: 2, MaxAge: 200 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.CloseClientConnections()
		srv.Close()
		hs.Close()
		model.Close()
		synth.Close()
	}()

	dir := t.TempDir()
	jsonOut, htmlOut := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"load", "-target", hs.URL, "-callers", "20", "-rate", "100",
		"-turns", "2", "-think", "10ms", "-barge-in", "0.2", "-deadline", "500ms", "-duration", "10s",
		"-json", jsonOut, "-html", htmlOut, "-label", "frontdoor"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "goodput:") {
		t.Errorf("no summary: %q", stdout.String())
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Callers struct {
			Offered  int  `json:"offered"`
			Balanced bool `json:"balanced"`
		} `json:"callers"`
		Turns struct {
			Balanced bool `json:"balanced"`
		} `json:"turns"`
		Server struct {
			Matches bool `json:"matches"`
		} `json:"server"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("JSON report: %v", err)
	}
	if r.Callers.Offered != 20 || !r.Callers.Balanced || !r.Turns.Balanced || !r.Server.Matches {
		t.Errorf("report: %+v\n%s", r, stdout.String())
	}
	h, err := os.ReadFile(htmlOut)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(h, []byte("<svg")) {
		t.Errorf("HTML report without SVG")
	}
}

func TestLoadRefusesRemoteTarget(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"load", "-target", "http://192.0.2.7:8080"}, &stdout, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "loopback") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestLoadTwilio runs `frontdoor load -protocol twilio` against an
// in-process server whose /v1/twilio checks signatures: the callers sign
// their upgrades, speak, and their turns reach the server's recognizer.
func TestLoadTwilio(t *testing.T) {
	defer goleak.VerifyNone(t)
	const token, public = "cli-test-token-0123456789", "wss://frontdoor.example.com/v1/twilio"
	st := stub.Settings{ModelDelay: 10 * time.Millisecond, Tokens: 2, SynthDelay: 10 * time.Millisecond, FrameCount: 10}
	model, synth, rec := stub.NewModel(st), stub.NewSynthesizer(st), stub.NewRecognizer(st)
	srv, err := server.New(server.Config{Config: session.Config{ModelBackend: model, Synthesizer: synth, Recognizer: rec},
		Twilio: telephony.Config{AuthToken: token, PublicURL: public}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.CloseClientConnections()
		srv.Close()
		hs.Close()
		model.Close()
		synth.Close()
		rec.Close()
	}()

	dir := t.TempDir()
	jsonOut := filepath.Join(dir, "r.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"load", "-target", hs.URL, "-protocol", "twilio",
		"-twilio-auth-token", token, "-twilio-url", public, "-callers", "2", "-rate", "100",
		"-turns", "1", "-barge-in", "0", "-utterance", "300ms", "-settle", "200ms", "-duration", "10s",
		"-json", jsonOut}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Config struct {
			Dialect string `json:"dialect"`
			Signed  bool   `json:"signed"`
		} `json:"config"`
		Callers struct {
			ByEnd map[string]int `json:"by_end"`
		} `json:"callers"`
		Goodput struct {
			Completed int `json:"completed"`
		} `json:"goodput"`
		Server struct {
			Matches bool `json:"matches"`
			Stages  []struct {
				Stage string `json:"stage"`
				Delta struct {
					Completed int `json:"completed"`
				} `json:"delta"`
			} `json:"stages"`
		} `json:"server"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("JSON report: %v", err)
	}
	recognized := 0
	for _, s := range r.Server.Stages {
		if s.Stage == "recognize" {
			recognized = s.Delta.Completed
		}
	}
	if r.Config.Dialect != "twilio" || !r.Config.Signed || r.Callers.ByEnd["served"] != 2 || r.Goodput.Completed != 2 ||
		recognized != 2 || !r.Server.Matches {
		t.Errorf("report: %+v\n%s", r, stdout.String())
	}
	if !strings.Contains(stdout.String(), "server turn stages: recognize offered 2") {
		t.Errorf("summary: %s", stdout.String())
	}
}

// TestLoadExitCodes: against a closed port, and against a server that
// answers but refuses every upgrade, `frontdoor load` exits 1 with one line
// saying why; for the refused upgrades after printing the summary with the
// callers' errors.
func TestLoadExitCodes(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	for _, tc := range []struct {
		name, target, reason, summary string
	}{
		// A closed port is found before any caller is offered: no summary.
		{"closed port", closed, "frontdoor load: target " + closed + " unreachable: dial tcp ", ""},
		{"every caller failed", notFound.URL, "frontdoor load: every caller failed: 3 of 3 ended in error", "ended: error 3"},
	} {
		var stdout, stderr bytes.Buffer
		// At a closed port, 100 callers at 1 a second would take 100 s to
		// all fail: it is reported before the first is offered.
		callers, rate := "3", "100"
		if tc.name == "closed port" {
			callers, rate = "100", "1"
		}
		code := run(context.Background(), []string{"load", "-target", tc.target, "-callers", callers, "-rate", rate, "-duration", "10s"}, &stdout, &stderr)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1; stderr %q", tc.name, code, stderr.String())
		}
		if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], tc.reason) {
			t.Errorf("%s: stderr %q, want one line starting %q", tc.name, stderr.String(), tc.reason)
		}
		if !strings.Contains(stdout.String(), tc.summary) {
			t.Errorf("%s: summary lacks %q:\n%s", tc.name, tc.summary, stdout.String())
		}
	}
}
