// Package admit is the admission machinery behind package stages: the
// Controller, its Dispatcher (time), the Store contract and its in-process
// adapters, policies, the adaptive rule, the recorder that package
// stages/trace replays, and the identity table. Package stages names what a
// server uses (the contract, its views, jobs, limits, dispositions,
// constructors) as aliases of these types; the packages under stages/
// (redisstage, stagestest, trace) use the machinery itself.
//
// It decides whether a unit of voice work may enter a constrained stage: a
// media session, a recognition, model or synthesis request, a callback.
//
// A Controller bounds three things at once: the work holding a resource lease
// (Limits.Slots), the work waiting for one (Limits.Waiting), and how old waiting
// work may grow before it has lost its conversational value (Limits.MaxAge).
// Every decision is a typed Disposition; nothing is refused silently.
//
// Work belongs to an owner (a call) at a generation. Rotate advances the
// owner's generation when the caller barges in: its queued work leaves the
// queue at once, and its active work is marked cancelled but keeps its lease
// until Release, because a cancel request is not evidence that the backend
// stopped using the resource. Capacity is therefore never over-admitted while
// cancelled work is still running; the count and age of that pending cleanup
// are reported in the Snapshot so that a stuck backend shows as reduced
// capacity.
//
// # Concurrency
//
// A Controller is safe for concurrent use. Every operation runs under one
// mutex and never waits inside it, so the check of every limit and the
// reservation it permits are one atomic step: two goroutines can never both
// see the last free slot or the last waiting position.
//
// The Controller starts no timer and reads no clock: every operation that
// judges or dates anything takes the time from its caller. A Dispatcher
// owns time for a Controller: it takes work when a slot frees or when the
// head of the queue reaches its deadline, so expiry is reported promptly
// without polling.
//
// # Memory
//
// The work a Controller retains is bounded by its limits, not by how much it
// has seen: queued and leased work lives in a slab of Slots+Waiting records,
// and terminal records (tombstones, kept so that State can still report an
// outcome and Offer can refuse a reused identity) in a first-in-first-out
// ring of at most Limits.Tombstones, the oldest evicted first. One map from
// identity to a stable entry serves live work and tombstones alike, so an
// identity is looked up in one map, not two, and an admission cycle, once the
// ring has grown to its bound, allocates nothing. (The tombstones used to live in
// golang-lru's simplelru; a tombstone is never looked up by recency nor added
// twice, so FIFO eviction is the same eviction, without an allocation per
// terminal record.)
//
// # Deadlines across stages
//
// Work that one stage hands to the next keeps the Born of the turn that
// created it (see Handoff): the caller's wait is one budget, and a later stage
// must never make old work look new.
package admit
