// Package suite holds the tests every gateway dialect runs, on top of the
// gatewaytest simulator: RunConn plays a whole exchange between a
// gateway.Conn and a simulated gateway over a real link, RunStop checks the
// dialect's stop, Fuzz checks a decoder against arbitrary input, and the
// Check helpers decode a dialect's documented samples from testdata. It is
// apart from gatewaytest so that the simulator (which a load generator
// uses) does not import package testing.
package suite
