// Package stages decides whether a unit of voice work may enter a constrained
// stage: a media session, a recognition, model or synthesis request, a callback.
//
// This package is the public face of admission: what a server programs
// against and nothing more, at most 30 names (TestFace holds it to that).
// A Gate admits Jobs within Limits and answers with a typed Disposition;
// nothing is refused silently. Work that waits gets a Pending; what
// operators see is read through a View (Snapshot, Ledger, Waiter). NewGate
// builds the in-process gate and Guard decorates any gate; package
// stages/redisstage builds the same contract on Redis, and package
// stages/stagestest runs one conformance suite against both.
//
// Two small packages extend the contract where only some servers need it:
// stages/claim is the claim queue, a Gate whose take is an agent's claim
// (the callback and handoff queues), with the dispositions only a claim
// gives; stages/adaptive moves a gate's slot limit by the latency and
// overload its backend shows.
//
// The machinery (the Controller and its Dispatcher, the Store contract,
// tickets, policies' internals, the adaptive rule, the recorder, the
// identity table) lives in stages/internal/admit, which only the packages
// under stages/ may import. The types named here are aliases of its types,
// so a value moves between the two without conversion.
//
// A Gate bounds three things at once: the work holding a resource lease
// (Limits.Slots), the work waiting for one (Limits.Waiting), and how old
// waiting work may grow before it has lost its conversational value
// (Limits.MaxAge). Work belongs to an owner (a call) at a generation.
// Rotate advances the owner's generation when the caller barges in: its
// queued work leaves the queue at once, and its active work is marked
// cancelled but keeps its lease until Release, because a cancel request is
// not evidence that the backend stopped using the resource.
//
// Time comes from package media/clock: every constructor takes a
// clock.Clock, so one manual clock drives a whole test.
package stages
