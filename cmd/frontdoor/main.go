// Command frontdoor is the voice front door: an admission-controlled server in
// front of AI voice agents, its load generator, its trace replayer and its
// callback queue tool.
//
// Usage:
//
//	frontdoor serve [flags]            run the server
//	frontdoor load [flags]             run synthetic callers against a server
//	frontdoor replay [flags] TRACE     run a recorded operation trace through a controller
//	frontdoor callbacks list|claim|complete|fail [flags]
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

var commands = map[string]command{
	"serve":     runServe,
	"load":      runLoad,
	"replay":    runReplay,
	"callbacks": runCallbacks,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: frontdoor serve|load|replay|callbacks [flags]")
		return 2
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "frontdoor: unknown command %q (want serve, load, replay or callbacks)\n", args[0])
		return 2
	}
	if err := cmd(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "frontdoor %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
