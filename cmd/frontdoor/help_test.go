package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test -run %s -update rewrites it after a deliberate change):\n--- got\n%s", path, t.Name(), got)
	}
}

// runCLI runs the command line in process with an empty environment for
// FRONTDOOR_* lookups already applied by parseFlags's caller (tests do not
// set any).
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// TestHelpGolden pins what a new user reads: the command list, serve's
// flags by area, and the other commands' usage.
func TestHelpGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout bool // the text is on stdout, else stderr
	}{
		{"help", []string{"help"}, 0, true},
		{"noargs", nil, 2, false},
		{"serve-help", []string{"serve", "-h"}, 0, false},
		{"help-serve", []string{"help", "serve"}, 0, false},
		{"load-help", []string{"load", "-h"}, 0, false},
		{"replay-help", []string{"replay", "-h"}, 0, false},
		{"callbacks-help", []string{"callbacks", "list", "-h"}, 0, false},
		{"version-help", []string{"version", "-h"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, o, e := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, e)
			}
			got, other := e, o
			if tc.stdout {
				got, other = o, e
			}
			if other != "" {
				t.Errorf("unexpected output on the other stream: %q", other)
			}
			name := tc.name
			if name == "help-serve" { // the same text as serve -h
				name = "serve-help"
			}
			if name == "noargs" {
				name = "help"
			}
			golden(t, name+".golden", got)
		})
	}
}

// TestServeFlagsHaveGroups fails when a serve flag has no area in
// serveFlagGroup or serveFlagPrefixes (it would show under "Other"), or
// when serveFlagGroup names a flag serve no longer has or an unknown area.
func TestServeFlagsHaveGroups(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs)
	areas := map[string]bool{}
	for _, g := range serveGroups {
		areas[g.key] = true
	}
	used := map[string]int{}
	fs.VisitAll(func(f *flag.Flag) {
		g := groupOf(f.Name)
		if g == "" {
			t.Errorf("serve flag -%s has no area: add it to serveFlagGroup in help.go", f.Name)
		}
		used[g]++
	})
	for name, g := range serveFlagGroup {
		if fs.Lookup(name) == nil {
			t.Errorf("serveFlagGroup names -%s, which serve does not have", name)
		}
		if !areas[g] {
			t.Errorf("serveFlagGroup puts -%s in unknown area %q", name, g)
		}
	}
	for _, g := range serveGroups {
		if g.key != "observability" && used[g.key] == 0 {
			t.Errorf("area %q has no flag", g.key)
		}
	}
}

// TestHelpTextsNameNoArgument: a back-quoted word in a flag's help is
// taken by package flag as the argument's name (-audio-max-frame showed
// `error`); every flag of every command shows its type instead, but for
// the few named on purpose (a flag.Value would show "value").
func TestHelpTextsNameNoArgument(t *testing.T) {
	sets := map[string]func(*flag.FlagSet){
		"serve": func(fs *flag.FlagSet) { serveFlags(fs) },
		"load":  func(fs *flag.FlagSet) { loadFlags(fs) },
	}
	for cmd, add := range sets {
		fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
		add(fs)
		fs.VisitAll(func(f *flag.Flag) {
			named := map[string]string{"policy": "policy", "stage-order": "order", "stub-model-capacity": "N[,N@DURATION...]",
				"session-slots": "n", "recognize-slots": "n", "model-slots": "n", "synth-slots": "n"}
			if name, _ := flag.UnquoteUsage(f); named[f.Name] != "" && name == named[f.Name] {
				return
			}
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s -%s: help text has a back-quote, which names its argument: %q", cmd, f.Name, f.Usage)
			}
		})
	}
}

// TestErrorsNameFlags: a bad setting is refused with the flag to change,
// never an internal field, and a bad command line exits 2.
func TestErrorsNameFlags(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for _, args := range [][]string{
		{"serve", "-model-slots", "0"},
		{"serve", "-session-queue", "-1"},
		{"serve", "-synth-max-wait", "-1s"},
		{"serve", "-callback-slots", "0"},
		{"serve", "-callback-lease", "0s"},
		{"serve", "-modle-slots", "4"},
		{"serve", "-model-slots", "four"},
		{"serve", "extra"},
		{"serve", "-backend", "llama"},
		{"serve", "-log-level", "loud"},
		{"serve", "-log-format", "xml"},
		{"load", "-target", "http://192.0.2.1:8080"},
		{"load", "-callers", "0"},
		{"load", "-rate", "0"},
		{"load", "-barge-in", "2"},
		{"load", "-protocol", "pigeon"},
		{"replay", "-slots", "0", "trace.jsonl"},
		{"replay"},
		{"callbacks"},
		{"callbacks", "ring"},
		{"callbacks", "list", "-data-dir", filepath.Join(dir, "nowhere")},
		{"callbacks", "claim", "-data-dir", dir, "-create"},
		{"frobnicate"},
	} {
		code, o, e := runCLI(t, args...)
		if o != "" {
			t.Errorf("%q: stdout %q", args, o)
		}
		for _, internal := range []string{"Slots:", "Waiting:", "AllowRemote", "MaxAge"} {
			if strings.Contains(e, internal) {
				t.Errorf("%q: error names an internal field %q: %s", args, internal, e)
			}
		}
		e = strings.ReplaceAll(e, dir, "$DIR")
		if strings.HasPrefix(e, "frontdoor: unknown command") {
			e, _, _ = strings.Cut(e, "\n")
			e += "\n"
		}
		b.WriteString("$ frontdoor " + strings.ReplaceAll(strings.Join(args, " "), dir, "$DIR") + "\n")
		b.WriteString(e)
		b.WriteString("exit " + string(rune('0'+code)) + "\n\n")
	}
	golden(t, "errors.golden", b.String())
}

// TestVersionText formats a build's module version and revision.
func TestVersionText(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/frontdoorhq/frontdoor", Version: "v0.4.1-0.20261201123432-037e1197a048+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "037e1197a048575ec2eb637e889a30a02374b718"},
			{Key: "vcs.time", Value: "2026-12-01T12:34:32Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := versionText(bi)
	bi.Settings, bi.Main.Version = nil, "(devel)"
	got += "\n" + versionText(bi) + "\n" + versionText(nil)
	golden(t, "version.golden", got)
}

// TestVersionBinary builds the binary and checks that `frontdoor version`
// prints the module version and revision its build information holds (as
// `go version -m` reads them).
func TestVersionBinary(t *testing.T) {
	bin := buildOnce(t)
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("frontdoor version: %v", err)
	}
	meta, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	var modVersion, revision string
	for _, line := range strings.Split(string(meta), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			modVersion = f[2]
		case len(f) >= 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			revision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if modVersion == "" {
		t.Fatalf("go version -m printed no module line:\n%s", meta)
	}
	text := string(out)
	if !strings.HasPrefix(text, "frontdoor "+modVersion+"\n") {
		t.Errorf("version output does not start with the module version %s:\n%s", modVersion, text)
	}
	if !strings.Contains(text, "module    github.com/frontdoorhq/frontdoor\n") {
		t.Errorf("version output does not name the module:\n%s", text)
	}
	wantRev := "revision  unknown"
	if revision != "" {
		wantRev = "revision  " + revision
	}
	if !strings.Contains(text, wantRev) {
		t.Errorf("version output lacks %q:\n%s", wantRev, text)
	}
}
