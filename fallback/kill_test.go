package fallback_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// buildBinaries builds the packages into dir in one go command, so that
// they compile and link in parallel.
func buildBinaries(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, b)
	}
}

// TestCallbacksSurviveKill9: a process that answered Queued is killed with
// SIGKILL; a Service opened on its data directory then finds every booked
// callback, claims one and completes it. (The operator's CLI on such a
// directory is cmd/frontdoor's TestCallbacksCLI.)
func TestCallbacksSurviveKill9(t *testing.T) {
	bin := t.TempDir()
	data := t.TempDir()
	buildBinaries(t, bin, "github.com/frontdoorhq/frontdoor/fallback/internal/acceptor")
	acceptor := filepath.Join(bin, "acceptor")

	cmd := exec.Command(acceptor, "-data-dir", data)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + strings.TrimSpace(addr)
	refs := map[string]bool{}
	for i, n := range []string{"+15550100", "+15550101", "+15550123"} {
		b, _ := json.Marshal(fallback.CallbackRequest{Call: "call" + string(rune('a'+i)), Turn: "t1", Number: n, Consent: true})
		resp, err := http.Post(base+"/accept", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var res fallback.CallbackResult
		json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if res.Disposition != stages.Queued || res.Ref == "" {
			t.Fatalf("callback %d: %+v", i, res)
		}
		refs[res.Ref] = true
	}
	http.DefaultClient.CloseIdleConnections()
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown code runs
		t.Fatal(err)
	}
	cmd.Wait()

	ctx := context.Background()
	s := newService(t, testConfig(data), clock.Or(nil)) // the wall clock, as the acceptor booked on
	list, err := s.ListCallbacks(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(refs) {
		t.Fatalf("after kill -9, %d callbacks listed, want %d", len(list), len(refs))
	}
	for _, c := range list {
		if !refs[c.Ref] || c.Status != fallback.StatusPending {
			t.Errorf("listed %+v", c)
		}
	}
	c, err := s.ClaimCallback(ctx, "op1")
	if err != nil || c.Number != "+15550100" || c.Attempt != 1 {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if done, err := s.FinishCallback(ctx, c.Ref, 1, fallback.StatusCompleted, "done"); err != nil || done.Status != fallback.StatusCompleted {
		t.Fatalf("complete = %+v, %v", done, err)
	}
}
