// Command frontdoor is the voice front door: an admission-controlled server in
// front of AI voice agents, its load generator, its trace replayer and its
// callback queue tool.
//
// Usage:
//
//	frontdoor                          list the commands
//	frontdoor serve [flags]            run the server
//	frontdoor load [flags]             run synthetic callers against a server
//	frontdoor replay [flags] TRACE     run a recorded operation trace through a controller
//	frontdoor callbacks list|claim|complete|fail [flags]
//	frontdoor version                  print the module version and VCS revision
//
// Every flag can also be set as FRONTDOOR_<NAME> in the environment
// (-model-slots is FRONTDOOR_MODEL_SLOTS) or in the file named by -config.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand. It writes results to stdout and diagnostics to
// stderr, and returns when ctx is cancelled or its work is done.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// commandInfo is a subcommand and the one line `frontdoor help` shows for
// it. A new subcommand is one more entry here.
type commandInfo struct {
	name    string
	summary string
	run     command
}

// commands are listed by `frontdoor help` in this order.
var commands = []commandInfo{
	{"serve", "run the server: the demo page, the call endpoints and every stage (http://127.0.0.1:8080/)", runServe},
	{"load", "offer synthetic callers to a running server and report what they got", runLoad},
	{"replay", "run a recorded stage trace under other limits, before changing them", runReplay},
	{"callbacks", "list, claim, complete or fail the durable callbacks callers left", runCallbacks},
	{"agent", "run a rehearsal agent: an OpenAI-compatible model that streams a set reply at a set pace", runAgent},
	{"token", "mint a signed, single-use call token for a telephony stream URL (the tenant of a phone call)", runToken},
	{"version", "print the module version and the VCS revision it was built from", runVersion},
}

func lookupCommand(name string) (commandInfo, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return commandInfo{}, false
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command line: it returns the exit code (0 done, 1 the
// command failed, 2 the command line is wrong).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 { // frontdoor help serve: that command's flags
			if _, ok := lookupCommand(args[1]); ok {
				return run(ctx, []string{args[1], "-h"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "frontdoor help: unknown command %q\n\n", args[1])
			usage(stderr)
			return 2
		}
		usage(stdout)
		return 0
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "frontdoor: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "frontdoor %s: %v\n", args[0], err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// usageError is an error in the command line itself (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usage lists the commands, one line each.
func usage(w io.Writer) {
	fmt.Fprint(w, `frontdoor stands in front of AI voice agents: every stage a call passes
(session, recognize, model, synthesize) has its own slots, queue and maximum
wait; a refused caller hears why and may leave a callback or ask for a person.

Usage: frontdoor COMMAND [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `  help       this list; "frontdoor help COMMAND" shows a command's flags

Start here: frontdoor serve, then open http://127.0.0.1:8080/ .
Every flag is also FRONTDOOR_<NAME> in the environment (-model-slots is
FRONTDOOR_MODEL_SLOTS) or a "name = value" line in the file given by -config.
`)
}
