package main

import (
	"flag"
	"fmt"
	"time"
)

// bound is the least value a numeric flag may take.
type bound int

const (
	atLeastOne  bound = iota // counts of slots and waiting places
	nonNegative              // waits and counts where 0 means none or off
	positive                 // durations that must pass
)

// flagRule is a bound on one flag, checked after parsing so that a bad value
// is refused with the flag's name rather than by the package it configures
// (whose error names its own fields).
type flagRule struct {
	name string
	b    bound
}

// stageRules bound the slots, queue and maximum wait of each named stage.
func stageRules(names ...string) []flagRule {
	var rs []flagRule
	for _, n := range names {
		rs = append(rs, flagRule{n + "-slots", atLeastOne}, flagRule{n + "-queue", atLeastOne}, flagRule{n + "-max-wait", nonNegative})
	}
	return rs
}

// checkFlags refuses the first flag of fs outside its rule. A rule naming a
// flag fs does not have is skipped.
func checkFlags(fs *flag.FlagSet, rules ...flagRule) error {
	for _, r := range rules {
		f := fs.Lookup(r.name)
		if f == nil {
			continue
		}
		g, ok := f.Value.(flag.Getter)
		if !ok {
			continue
		}
		var v float64
		switch x := g.Get().(type) {
		case int:
			v = float64(x)
		case int64:
			v = float64(x)
		case float64:
			v = x
		case time.Duration:
			v = float64(x)
		default:
			continue
		}
		switch {
		case r.b == atLeastOne && v < 1:
			return usageError{fmt.Errorf("-%s %s: want at least 1", f.Name, f.Value)}
		case r.b == nonNegative && v < 0:
			return usageError{fmt.Errorf("-%s %s: must not be negative", f.Name, f.Value)}
		case r.b == positive && v <= 0:
			return usageError{fmt.Errorf("-%s %s: must be more than 0", f.Name, f.Value)}
		}
	}
	return nil
}

// serveRules bound serve's numeric flags (where 0 means a default or off,
// only negative values are refused).
var serveRules = append(stageRules("session", "recognize", "model", "synth", "callback", "handoff"),
	flagRule{"callback-lease", positive},
	flagRule{"cleanup-timeout", nonNegative},
	flagRule{"shed-refusal-rate", nonNegative},
	flagRule{"drain-timeout", nonNegative},
	flagRule{"quarantine-after", nonNegative},
	flagRule{"audio-max-frame", nonNegative},
	flagRule{"audio-max-rate", nonNegative},
	flagRule{"audio-window", nonNegative},
	flagRule{"backend-stall-timeout", nonNegative},
	flagRule{"store-lease-ttl", nonNegative},
	flagRule{"store-timeout", nonNegative},
	flagRule{"tenant-sessions", nonNegative},
	flagRule{"tenant-turns-per-minute", nonNegative},
	flagRule{"max-conns", nonNegative},
)
