package telephony

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

// The SIP tests here meet the sipgo v1.7.3 goroutine media/sip's TestMain
// ignores, for the reason given there: the reader of a UDP connection sipgo
// opened itself (TransportUDP.createConnection), whose reference count can
// go negative so that UserAgent.Close skips it. It was seen once in the
// fresh-clone CI run (a refused SIP dial's transaction).
//
// Up to eight tests run at once unless -parallel says otherwise: the tests
// mostly wait on audio paced in real time, so more of them than the two
// cores overlap their waits. Every test and most subtests run in parallel:
// nothing they set is shared (a keypad's key wait is its endpoint's
// KeyWait, not a package variable).
func TestMain(m *testing.M) {
	flag.Parse()
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", "8")
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/emiago/sipgo/sip.(*TransportUDP).readUDPConnection"))
}

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
