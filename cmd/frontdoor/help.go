package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagGroup is one area of serve's flags, printed under its title with
// a line saying what the area is for.
type flagGroup struct {
	key, title, about string
}

// serveGroups are the areas of `frontdoor serve -h`, in the order shown.
var serveGroups = []flagGroup{
	{"listen", "Listening and security",
		"where the server listens, who may call and how often, and the bounds on connections and caller audio (docs/SECURITY.md)"},
	{"stages", "Stages",
		"each stage's slots (work holding a lease at once), queue (work waiting) and maximum wait, and how cancelled work is cleaned up"},
	{"backends", "Backends",
		"the recognizer, model and synthesizer a turn passes: stubs, pocketsphinx, espeak-ng, or any OpenAI-compatible server"},
	{"fallback", "Fallback",
		"what a refused caller may take instead: a durable callback (SQLite in -data-dir) or a person (handoff)"},
	{"telephony", "Telephony and WebRTC",
		"phone gateways on /v1/twilio (docs/TELEPHONY.md) and browsers on /v1/webrtc"},
	{"fleet", "Fleet",
		"several replicas sharing one set of limits and queues on Redis (docs/FLEET.md)"},
	{"observability", "Observability",
		"logs (a line per call and per turn) and traces (OTLP); metrics are on /metrics, stage state on /v1/stages, readiness on /readyz (docs/OBSERVABILITY.md)"},
	{"stubs", "Stubs for testing",
		"the stub backends' timings and faults, to rehearse overload without a model server"},
}

// serveFlagGroup says which area of serveGroups each serve flag belongs
// to. A new serve flag gets an entry here (or a prefix in
// serveFlagPrefixes); TestServeFlagsHaveGroups fails until it has one.
var serveFlagGroup = map[string]string{
	// listening and security
	"listen": "listen", "config": "listen", "drain-timeout": "listen",
	"auth": "listen", "auth-keys": "listen", "jwt-secret-env": "listen", "jwt-issuer": "listen", "jwt-audience": "listen",
	"allowed-origins": "listen", "operator-listen": "listen", "overload-http": "listen",
	"read-header-timeout": "listen", "read-timeout": "listen", "write-timeout": "listen", "idle-timeout": "listen",
	"max-header-bytes": "listen", "max-conns": "listen", "conn-idle-timeout": "listen",
	"max-conns-per-addr": "listen", "max-handshakes-per-addr": "listen", "probe-conns": "listen", "trusted-proxies": "listen",
	"ws-ping-interval": "listen", "ws-ping-timeout": "listen", "conn-write-buffer": "listen",
	"call-token-secret-env": "listen", "call-token-required": "listen",
	"allow-open-gateways": "listen", "health-listen": "listen",
	"audio-max-frame": "listen", "audio-max-rate": "listen", "audio-window": "listen",
	// stages
	"cleanup-timeout": "stages", "stage-order": "stages", "synth-segment-grace": "stages", "pace": "stages", "policy": "stages", "quarantine-after": "stages",
	// backends
	"backend": "backends", "model": "backends", "synth": "backends", "recognize": "backends",
	"model-url": "backends", "model-name": "backends", "model-api-key-env": "backends", "system-prompt": "backends",
	"synth-url": "backends", "synth-model": "backends", "synth-voice": "backends", "synth-api-key-env": "backends",
	"recognize-url": "backends", "recognize-model": "backends", "recognize-api-key-env": "backends",
	"backend-stall-timeout": "backends",
	// fallback
	"data-dir": "fallback", "shed-refusal-rate": "fallback",
	// observability
	"log-format": "observability", "log-level": "observability", "log-caller-content": "observability", "cpuprofile": "observability",
}

// serveFlagPrefixes place whole families of flags; an entry in
// serveFlagGroup wins over a prefix.
var serveFlagPrefixes = []struct{ prefix, group string }{
	{"tenant-", "listen"},
	{"callback-", "fallback"}, {"handoff-", "fallback"}, {"booking-", "fallback"},
	{"twilio-", "telephony"}, {"webrtc-", "telephony"}, {"sip-", "telephony"},
	{"store", "fleet"},
	{"otlp-", "observability"}, {"record-trace", "observability"},
	{"stub-", "stubs"},
	{"backend-", "backends"},
}

func init() {
	for _, st := range []string{"session", "recognize", "model", "synth"} { // stageFlags
		for _, f := range []string{"-slots", "-queue", "-max-wait"} {
			serveFlagGroup[st+f] = "stages"
		}
	}
}

// groupOf is the area of serve flag name, or "" when it has none.
func groupOf(name string) string {
	if g, ok := serveFlagGroup[name]; ok {
		return g
	}
	for _, p := range serveFlagPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.group
		}
	}
	return ""
}

// serveUsage prints serve's flags by area.
func serveUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: frontdoor serve [flags]

Runs the server: the demo page on -listen, the call endpoints (/v1/session,
/v1/twilio, /v1/webrtc) and every stage. Each flag is also FRONTDOOR_<NAME>
in the environment or a "name = value" line in the -config file; the
command line wins over the environment, which wins over the file.
`)
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byGroup[groupOf(f.Name)] = append(byGroup[groupOf(f.Name)], f) })
	groups := serveGroups
	if len(byGroup[""]) > 0 { // a flag without an area still shows
		groups = append(groups[:len(groups):len(groups)], flagGroup{"", "Other", "flags not yet placed in an area"})
	}
	for _, g := range groups {
		if len(byGroup[g.key]) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s\n", g.title, g.about)
		for _, f := range byGroup[g.key] {
			printFlag(w, f)
		}
	}
}

// commandUsage returns a fs.Usage that prints a usage line, what the
// command does, and its flags.
func commandUsage(w io.Writer, fs *flag.FlagSet, head string) func() {
	return func() {
		fmt.Fprint(w, head)
		if !strings.HasSuffix(head, "\n\n") {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, "Flags:")
		fs.VisitAll(func(f *flag.Flag) { printFlag(w, f) })
	}
}

// printFlag prints one flag as flag.PrintDefaults does.
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	line := "  -" + f.Name
	if name != "" {
		line += " " + name
	}
	usage = strings.ReplaceAll(usage, "\n", "\n    \t")
	fmt.Fprintf(w, "%s\n    \t%s", line, usage)
	switch f.DefValue {
	case "", "0", "false", "0s":
	default:
		if name == "string" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		} else {
			fmt.Fprintf(w, " (default %v)", f.DefValue)
		}
	}
	fmt.Fprintln(w)
}
