// Package sessiontest is the test rig every package of session runs its
// calls on: an engine with stub backends behind an HTTP handler on a
// loopback httptest server, and a caller that dials real WebSockets and
// reads the protocol's messages.
//
// It does not import package session, on purpose: package session's own
// tests (package session, in the package's directory) use it too, and a
// test file of package session that imports a package importing session
// is an import cycle. So the rig is generic in the engine (Rig[E], with E
// only what a rig needs of it) and in its config (Build[C, E]), and each
// package's tests name *session.Engine and session.Config themselves. It
// does not import testing either: it is given a testing.TB.
package sessiontest
