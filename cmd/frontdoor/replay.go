package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/trace"
)

// runReplay runs a recorded trace through a controller with the limits given
// on the command line: operators try a limit change against real traffic.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var l stages.Limits
	fs.IntVar(&l.Slots, "slots", 4, "work holding a lease at once")
	fs.IntVar(&l.Waiting, "waiting", 16, "work waiting for a lease")
	fs.DurationVar(&l.MaxAge, "max-age", 2*time.Second, "oldest age still eligible")
	fs.IntVar(&l.Tombstones, "tombstones", 0, "terminal records retained (0: default)")
	fs.String("config", "", "settings file (name = value lines)")
	fs.Usage = commandUsage(stderr, fs, `Usage: frontdoor replay [flags] TRACE.jsonl   (- reads standard input)

Runs a recorded trace of stage operations through a controller with the
limits given here, to try a limit change against real traffic.
`)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("want exactly one trace file (frontdoor replay -h)")}
	}
	if err := checkFlags(fs, flagRule{"slots", atLeastOne}, flagRule{"waiting", atLeastOne},
		flagRule{"max-age", nonNegative}, flagRule{"tombstones", nonNegative}); err != nil {
		return err
	}
	c, err := stages.New(l)
	if err != nil {
		return err
	}
	in := io.Reader(os.Stdin)
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	_, err = trace.Replay(c, in, stdout)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	return nil
}
