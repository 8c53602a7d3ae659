// Package redisqueue puts the fallback queues of a fleet on Redis Streams:
// the callback queue (CallbackStore, a fallback.CallbackQueue) and the
// handoff queue (HandoffQueue, a fallback.HandoffQueue), each one stream
// with one consumer group shared by every replica.
//
// Each queue is bounded, the count and the change in the same Lua script,
// so replicas cannot overfill it; a claim is an entry in the group's
// pending list and is done only when acknowledged (XACK); a claim whose
// worker died is taken back with XAUTOCLAIM once idle for the claim's TTL
// and put back at its place, and its old attempt is fenced, so no ticket a
// caller was promised is lost. docs/FLEET.md has the failure model.
//
// Both queues are also claim gates (ClaimGate: NewHandoffGate,
// NewCallbackGate), so that the contract every claim gate keeps
// (stagestest.RunClaimGate) runs on the queues fallback uses in fleet
// mode, against a real redis-server. Each gate is built on its queue's
// fallback contract alone (NewHandoffGateOn, NewCallbackGateOn), so the
// same suite runs on fallback.Service's in-process queues too; the
// callback gate with stagestest.Kept, since a booked callback is not
// withdrawn.
package redisqueue

import "errors"

// ErrUnavailable wraps every failure to reach Redis: the caller fails
// closed (a refusal it can tell the caller about), never open.
var ErrUnavailable = errors.New("redisqueue: redis unavailable")
