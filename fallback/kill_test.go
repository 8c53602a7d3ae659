package fallback_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/fallback"
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
// SIGKILL; `frontdoor callbacks` then finds every booked callback, claims
// one and completes it.
func TestCallbacksSurviveKill9(t *testing.T) {
	bin := t.TempDir()
	data := t.TempDir()
	buildBinaries(t, bin, "github.com/frontdoorhq/frontdoor/fallback/internal/acceptor", "github.com/frontdoorhq/frontdoor/cmd/frontdoor")
	acceptor, frontdoor := filepath.Join(bin, "acceptor"), filepath.Join(bin, "frontdoor")

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

	out, err := exec.Command(frontdoor, "callbacks", "list", "-data-dir", data, "-json").Output()
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var list []fallback.Callback
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("list output %q: %v", out, err)
	}
	if len(list) != len(refs) {
		t.Fatalf("after kill -9, %d callbacks listed, want %d", len(list), len(refs))
	}
	for _, c := range list {
		if !refs[c.Ref] || c.Status != fallback.StatusPending {
			t.Errorf("listed %+v", c)
		}
	}
	if strings.Contains(string(out), "+15550100") {
		t.Error("list shows a number unredacted")
	}

	out, err = exec.Command(frontdoor, "callbacks", "claim", "-data-dir", data, "-operator", "op1", "-json").Output()
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	var c fallback.Callback
	if err := json.Unmarshal(out, &c); err != nil || c.Number != "+15550100" || c.Attempt != 1 {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	out, err = exec.Command(frontdoor, "callbacks", "complete", "-data-dir", data, "-attempt", "1", "-note", "done", c.Ref).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "completed") {
		t.Fatalf("complete: %v\n%s", err, out)
	}
}
