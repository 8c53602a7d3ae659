package siptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ErrSIPpFailed reports a SIPp run in which a call failed its scenario
// (SIPp's exit status 1), or that ended otherwise than with every call
// successful.
var ErrSIPpFailed = errors.New("siptest: sipp calls failed")

// SIPp runs Debian's SIPp (package sip-tester) against target (ip:port)
// as a user-agent client on loopback, with a directory of its own for
// its logs, and returns once it exits: nil when every call passed its
// scenario (exit status 0). args choose the scenario (-sn uac, or -sf
// FILE), the calls (-m) and their length (-d); the service (the request
// URI's user) is acme. The error of a failed run holds what SIPp logged
// about the unexpected messages. A missing binary fails the test.
func SIPp(ctx context.Context, t testing.TB, target string, args ...string) error {
	t.Helper()
	bin, err := exec.LookPath("sipp")
	if err != nil {
		t.Fatalf("sipp is not installed (apt-get install sip-tester; .ci/test does): %v", err)
	}
	dir := t.TempDir()
	all := []string{target, "-i", "127.0.0.1", "-p", strconv.Itoa(freePort(t)), "-mp", strconv.Itoa(freePort(t)),
		"-s", "acme", "-nostdin", "-timeout", "80s", "-timeout_error", "-trace_err", "-trace_screen"}
	cmd := exec.CommandContext(ctx, bin, append(all, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	var logs strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		fmt.Fprintf(&logs, "--- %s\n%s\n", filepath.Base(f), b)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%w: exit status %d\n%s%s", ErrSIPpFailed, exit.ExitCode(), logs.String(), tail(out, 2000))
	}
	return fmt.Errorf("siptest: sipp: %w\n%s", err, tail(out, 2000))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
