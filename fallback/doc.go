// Package fallback gives refused or expired voice work somewhere honest to
// go: a consented, durable callback or a handoff to a human agent, and the
// prompts that tell the caller only what the system knows.
//
// Each fallback is a bounded stage of its own, guarded by a
// claim.Gate with its own slots, queue and maximum age, so that a
// flood of refused callers cannot move the overload into an unlimited
// callback list or agent queue. A full fallback is the disposition
// Overloaded, never a silent drop, and its refusals are counted in the
// controller's ledger like every other stage.
//
// Fallback work is admitted when a human claims it (an operator claiming a
// callback, an agent claiming a handoff), not when a slot frees: each queue
// is a claim.Gate, the Dispatcher made ClaimOnly, whose take is the
// claim and whose one timer expires the head at its deadline. The same
// conformance suite (stagestest.RunClaimGate) runs on it and on the Redis
// claim gate.
//
// Callbacks are written to a CallbackStore (SQLite under the data directory
// by default) before the caller is told they are queued; the store is the
// record and the controller is re-filled from it at start-up, so the
// callback bound holds across restarts. Handoffs live only as long as the
// caller stays on the line.
//
// The Service asks each queue through one contract, CallbackQueue and
// HandoffQueue (queue.go), and never which mode it runs in: by default the
// queues are this process's claim gates (localCallbacks in front of the
// store, localHandoffs); in a fleet they are the fleet's (redisqueue's, on
// Redis, given with WithStore and WithHandoffQueue), whose bounds, order
// and claims hold for every process at once, so that an agent connected to
// any process works the handoffs of callers held by all of them. Local and
// fleet differ in the constructor only. The Service's rounds (loop.go) read
// each queue's snapshot, run its sweep and learn outcomes decided
// elsewhere (Watch, Get); an in-process queue answers them at once.
//
// The caller-facing sentences are package fallback/prompt's table, keyed by
// stage, reason and whether the stage's backend had started; docs/PROMPTS.md
// is generated from it. PromptAudio renders those sentences once, outside the
// synthesis stage, and serves them from a cache (fallback/promptaudio) so
// that a prompt is heard even while synthesis is the overloaded stage.
//
// What the Service is built from has a package of its own, each below it:
// the durable record of callbacks and its SQLite store (callbackstore), the
// booking caps and their in-process counter (booking), prompt audio
// (promptaudio), and the in-process claim gate adapted to the Service's
// locks (internal/claimq). What is built on it has one too: the operators'
// HTTP API (callbackapi) and the fleet's Redis queues (redisqueue). The
// names of the record, the caps and prompt audio are kept here as aliases,
// so that a caller of the Service names one package.
package fallback
