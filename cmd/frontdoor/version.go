package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints the module version and the VCS revision recorded in the
// binary's build information.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = commandUsage(stderr, fs, "Usage: frontdoor version\n\nPrints the module version and the VCS revision the binary was built from.\n")
	if err := parseQuiet(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	_, err := io.WriteString(stdout, versionText(bi))
	return err
}

// versionText describes bi (nil: a binary without build information).
func versionText(bi *debug.BuildInfo) string {
	if bi == nil {
		return "frontdoor: no build information in this binary\n"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(unknown)"
	}
	s := fmt.Sprintf("frontdoor %s\nmodule    %s\n", version, bi.Main.Path)
	setting := map[string]string{}
	for _, kv := range bi.Settings {
		setting[kv.Key] = kv.Value
	}
	if rev := setting["vcs.revision"]; rev != "" {
		if setting["vcs.modified"] == "true" {
			// Go counts untracked files too: most often an earlier
			// binary built in the checkout under a name .gitignore
			// does not list (it lists /frontdoor).
			rev += " (+dirty: the checkout had uncommitted changes or untracked files, such as a binary built there under a name other than frontdoor)"
		}
		s += fmt.Sprintf("revision  %s\n", rev)
		if t := setting["vcs.time"]; t != "" {
			s += fmt.Sprintf("committed %s\n", t)
		}
	} else {
		s += "revision  unknown (the build recorded no VCS information)\n"
	}
	return s + fmt.Sprintf("go        %s\n", bi.GoVersion)
}
