package main

import (
	"flag"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/frontdoorhq/frontdoor/stages"
	"go.uber.org/goleak"
)

// TestMain runs up to eight tests at once unless -parallel says otherwise:
// the tests that call t.Parallel mostly wait (on the binary's processes,
// Redis TTLs, SIP and media timeouts), so more of them than the two cores
// overlap their waits. goleak checks the whole package at the end, as a
// per-test check cannot tell a parallel test's goroutines from another's.
//
// A run of the whole package starts the binary's build at once, beside
// the tests that do not need it, rather than in the first test that does:
// that test runs before the parallel ones, which all wait for it.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelAtLeast(8)
	var build sync.WaitGroup
	if !flagSet("test.run") && !flagSet("test.bench") {
		build.Go(buildBinary)
	}
	rc := m.Run()
	build.Wait()
	if secBinary.dir != "" {
		_ = os.RemoveAll(secBinary.dir)
	}
	if rc == 0 {
		http.DefaultClient.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			rc = 1
		}
	}
	os.Exit(rc)
}

// productPolicy is the zero stages.Policy: frontdoor, not a baseline.
var productPolicy stages.Policy

// parallelAtLeast sets -test.parallel to n unless the command line set it.
func parallelAtLeast(n int) {
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
