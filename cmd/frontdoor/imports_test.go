package main

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/frontdoorhq/frontdoor"

// importRules are the directions of docs/ARCHITECTURE.md: a package under
// from (its path, or anything below it) may not depend, directly or through
// other packages of this module, on a package under any of the forbidden
// paths, except those listed in allow. Only the packages' own imports count,
// not their tests'.
var importRules = []struct {
	from      string
	forbidden []string
	allow     []string
}{
	{from: "stages", forbidden: []string{"session", "fallback", "media", "web", "cmd"}},
	// The claim queue and the adaptive limit extend the public face: they
	// sit on it and on the machinery, not on the stores or the tools.
	{from: "stages/claim", forbidden: []string{"stages/redisstage", "stages/stagestest", "stages/trace", "stages/adaptive"}},
	{from: "stages/adaptive", forbidden: []string{"stages/redisstage", "stages/stagestest", "stages/trace", "stages/claim"}},
	// The one clock is a leaf: it knows nothing of the module.
	{from: "media/clock", forbidden: []string{"stages", "session", "fallback", "media", "web", "cmd"}, allow: []string{"media/clock"}},
	{from: "media", forbidden: []string{"stages", "session", "fallback", "web", "cmd"}},
	{from: "session/backend", forbidden: []string{"stages", "session", "fallback", "web", "cmd"}, allow: []string{"session/backend"}},
	// Downward only: fallback renders prompts through a Synthesizer of its
	// own, adapted at the composition root; nothing under session.
	{from: "fallback", forbidden: []string{"session", "web", "cmd"}},
	{from: "fallback/prompt", forbidden: []string{"fallback", "session", "media", "web", "cmd"}, allow: []string{"fallback/prompt"}},
	// What the Service is built from sits below it: the callback record,
	// the booking caps, prompt audio and the claim queue import no other
	// part of fallback (but the prompt table).
	{from: "fallback/callbackstore", forbidden: []string{"stages", "fallback", "session", "media", "web", "cmd"}, allow: []string{"fallback/callbackstore"}},
	{from: "fallback/booking", forbidden: []string{"fallback", "session", "media", "web", "cmd"}, allow: []string{"fallback/booking"}},
	{from: "fallback/promptaudio", forbidden: []string{"fallback", "session", "media", "web", "cmd"}, allow: []string{"fallback/promptaudio", "fallback/prompt"}},
	{from: "fallback/internal/claimq", forbidden: []string{"fallback", "session", "media", "web", "cmd"}, allow: []string{"fallback/internal/claimq"}},
	// The call engine imports no transport and no fallback queue: only the
	// sentences it must say when it refuses work.
	{from: "session", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: append([]string{"session/backend", "session/internal/pcmu", "session/segment", "session/wire", "fallback/prompt"}, engineParts...)},
	// The engine's parts (engineParts) know nothing of the engine, of
	// each other or of what sits on the engine: the engine calls them, and
	// what they need of it they take as an interface or a value.
	{from: "session/audiolimit", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/audiolimit", "session/backend", "session/wire"}},
	{from: "session/heartbeat", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/heartbeat", "session/backend", "session/wire"}},
	{from: "session/tenant", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/tenant", "session/backend", "session/wire"}},
	// The refusal contract: what the engine reports and its Fallback
	// answers, in the protocol's terms and the prompt table's.
	{from: "session/refusal", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/refusal", "session/backend", "session/wire", "fallback/prompt"}},
	{from: "session/view", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/view", "session/backend", "session/wire"}},
	{from: "session/internal/ablate", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/ablate"}},
	{from: "session/internal/admission", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/admission", "session/backend", "session/wire"}},
	{from: "session/internal/answer", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/answer", "session/backend", "session/wire", "fallback/prompt"}},
	{from: "session/internal/listen", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/listen", "session/backend", "session/wire"}},
	{from: "session/internal/meter", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/meter", "session/backend", "session/wire"}},
	{from: "session/internal/metrics", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/metrics", "session/backend", "session/wire"}},
	{from: "session/internal/observe", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/observe", "session/backend", "session/wire"}},
	// The call's queue and its one writer: a part built on three lower
	// ones (the shared pacer, the stall watch, pooled prompt frames); it
	// speaks session/wire (and so its offer kinds, fallback/prompt).
	{from: "session/internal/outbound", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/outbound", "session/internal/pace", "session/internal/stall", "session/internal/promptaudio", "session/backend", "session/wire", "fallback/prompt"}},
	{from: "session/internal/pace", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/pace", "session/backend", "session/wire"}},
	{from: "session/internal/promptaudio", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/promptaudio", "session/backend", "session/wire"}},
	{from: "session/internal/stall", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/internal/stall", "session/backend", "session/wire"}},
	// The native protocol's types: below the engine, which speaks them
	// to every transport; the transports may import it (they are not
	// forbidden it above).
	{from: "session/wire", forbidden: []string{"session", "fallback", "web", "cmd"}, allow: []string{"session/wire", "session/backend", "fallback/prompt"}},
	// Leaves: the sentence splitter and the rehearsal agent know nothing
	// of the module.
	{from: "session/segment", forbidden: []string{"stages", "session", "fallback", "media", "web", "cmd"}, allow: []string{"session/segment"}},
	{from: "cmd/frontdoor/agent", forbidden: []string{"stages", "session", "fallback", "media", "web", "cmd/frontdoor/load", "cmd/frontdoor/backends"}},
	{from: "session/native", forbidden: []string{"session/telephony", "session/webrtc", "session/offer", "session/server", "fallback"}, allow: []string{"fallback/prompt"}},
	{from: "session/webrtc", forbidden: []string{"session/telephony", "session/native", "session/offer", "session/server", "fallback"}, allow: []string{"fallback/prompt"}},
	{from: "session/telephony", forbidden: []string{"session/native", "session/webrtc", "session/offer", "session/server"}},
	{from: "session/offer", forbidden: []string{"session/native", "session/webrtc", "session/telephony", "session/server"}},
	{from: "web", forbidden: []string{"session", "fallback", "cmd"}},
}

// engineParts are the packages the call engine was split into
// (docs/ARCHITECTURE.md, "How session is split").
var engineParts = []string{
	"session/audiolimit",
	"session/heartbeat",
	"session/refusal",
	"session/tenant",
	"session/view",
	"session/internal/ablate",
	"session/internal/admission",
	"session/internal/answer",
	"session/internal/listen",
	"session/internal/meter",
	"session/internal/metrics",
	"session/internal/observe",
	"session/internal/outbound",
	"session/internal/pace",
	"session/internal/promptaudio",
	"session/internal/stall",
}

// everywhere are the leaves every package may import, whatever its rule
// forbids: the one clock (docs/ARCHITECTURE.md).
var everywhere = []string{"media/clock"}

// TestImportDirections fails when a package reaches, even indirectly, one
// its place in docs/ARCHITECTURE.md says it must not know.
func TestImportDirections(t *testing.T) {
	imports := modulePackages(t)
	for _, r := range importRules {
		for pkg := range imports {
			if !under(pkg, r.from) || (r.from == "session" && pkg != "session") {
				continue
			}
			for _, dep := range closure(imports, pkg) {
				bad := slices.ContainsFunc(r.forbidden, func(f string) bool { return under(dep, f) })
				ok := slices.ContainsFunc(r.allow, func(a string) bool { return under(dep, a) }) ||
					slices.Contains(everywhere, dep)
				if bad && !ok {
					t.Errorf("%s depends on %s (via %s)", pkg, dep, strings.Join(path(imports, pkg, dep), " -> "))
				}
			}
		}
	}
}

// modulePackages reads, for every package of this module, the packages of
// this module it imports (relative paths, "" for none).
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		bp, err := build.ImportDir(p, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel(root, p)
		var deps []string
		for _, imp := range bp.Imports {
			if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
				deps = append(deps, dep)
			}
		}
		out[filepath.ToSlash(rel)] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 || out["session"] == nil {
		t.Fatalf("found %d packages under %s: the walk is broken", len(out), root)
	}
	return out
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// closure lists every module package pkg depends on.
func closure(imports map[string][]string, pkg string) []string {
	seen := map[string]bool{pkg: true}
	var out []string
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, d := range imports[p] {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
				queue = append(queue, d)
			}
		}
	}
	return out
}

// path is one chain of imports from pkg to dep, for the error message.
func path(imports map[string][]string, pkg, dep string) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == dep {
			break
		}
		for _, d := range imports[p] {
			if _, ok := prev[d]; !ok {
				prev[d] = p
				queue = append(queue, d)
			}
		}
	}
	var chain []string
	for p := dep; p != ""; p = prev[p] {
		chain = append([]string{p}, chain...)
	}
	return chain
}
