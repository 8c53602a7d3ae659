package web_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Goroutines that outlive a test by design are listed here, each with why.
var leakOptions = []goleak.Option{}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, leakOptions...) }
