package sip

import (
	"testing"

	"go.uber.org/goleak"
)

// One goroutine of sipgo v1.7.3 is ignored: the reader of a UDP connection
// sipgo opened itself (TransportUDP.createConnection). Its reference count
// can go negative ("UDP ref went negative"), and UserAgent.Close then skips
// it, so nothing this package holds can stop it. The package routes its own
// requests through its listening sockets so that sipgo rarely opens one;
// TestDialRefusals (a 401 answered without credentials) still shows it
// about once in ten runs.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/emiago/sipgo/sip.(*TransportUDP).readUDPConnection"))
}
