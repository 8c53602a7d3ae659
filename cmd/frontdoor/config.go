package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// parseFlags parses args into fs, then fills every flag not given on the
// command line from the environment (FRONTDOOR_<NAME>, dashes as
// underscores) and then from the file named by the -config flag, if fs has
// one. The command line wins over the environment, which wins over the file.
//
// The config file holds one "name = value" per line; blank lines and lines
// starting with # are ignored. Names are flag names without the dash.
//
// Only -h prints fs.Usage: a mistyped flag is one line naming it, not the
// whole list.
func parseFlags(fs *flag.FlagSet, args []string, lookupEnv func(string) (string, bool)) error {
	if err := parseQuiet(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var fileErr error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || fileErr != nil {
			return
		}
		env := "FRONTDOOR_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookupEnv(env); ok {
			if err := f.Value.Set(v); err != nil {
				fileErr = fmt.Errorf("%s: %w", env, err)
				return
			}
			set[f.Name] = true
		}
	})
	if fileErr != nil {
		return fileErr
	}
	cfg := fs.Lookup("config")
	if cfg == nil || cfg.Value.String() == "" {
		return nil
	}
	f, err := os.Open(cfg.Value.String())
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return applyConfig(fs, f, set, cfg.Value.String())
}

// parseQuiet parses args into fs. On -h it prints fs.Usage and returns
// flag.ErrHelp; on a bad flag it prints nothing and returns a usageError
// that names the flag and where the list is.
func parseQuiet(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(flagsFirst(fs, args))
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return err
	case err != nil:
		return usageError{fmt.Errorf("%w (frontdoor %s -h lists the flags)", err, fs.Name())}
	}
	return nil
}

// flagsFirst moves the positional arguments in args after the flags, so
// that "callbacks complete TICKET -server URL" parses -server as the flag
// package would "callbacks complete -server URL TICKET". A flag that is not
// boolean and has no "=value" takes the next argument as its value; "--"
// ends the flags. An unknown flag is left in place for Parse to report.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if len(pos) == 0 {
		return flags
	}
	return append(append(flags, "--"), pos...)
}

func applyConfig(fs *flag.FlagSet, r io.Reader, set map[string]bool, name string) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s:%d: want name = value", name, n)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		f := fs.Lookup(strings.TrimPrefix(k, "-"))
		if f == nil {
			return fmt.Errorf("%s:%d: unknown setting %q", name, n, k)
		}
		if set[f.Name] {
			continue
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", name, n, k, err)
		}
	}
	return sc.Err()
}
