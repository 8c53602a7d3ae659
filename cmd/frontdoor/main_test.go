package main

import (
	"os"
	"testing"

	"github.com/frontdoorhq/frontdoor/stages"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	rc := m.Run()
	if secBinary.dir != "" {
		_ = os.RemoveAll(secBinary.dir)
	}
	if rc == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			rc = 1
		}
	}
	os.Exit(rc)
}

// productPolicy is the zero stages.Policy: frontdoor, not a baseline.
var productPolicy stages.Policy
