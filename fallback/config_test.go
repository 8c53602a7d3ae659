package fallback_test

import (
	"flag"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
)

func TestConfigFlags(t *testing.T) {
	cfg := fallback.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.Flags(fs)
	for _, name := range []string{"callback-slots", "callback-queue", "callback-max-wait", "callback-lease", "handoff-slots", "handoff-queue", "handoff-max-wait", "data-dir"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag -%s not registered", name)
		}
	}
	if err := fs.Parse([]string{"-callback-queue", "7", "-handoff-max-wait", "90s"}); err != nil {
		t.Fatal(err)
	}
	if cfg.CallbackQueue != 7 || cfg.HandoffMaxWait != 90*time.Second || cfg.CallbackMaxWait < time.Hour {
		t.Fatalf("%+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
