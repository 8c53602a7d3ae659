// Package redisstage runs the stages contract on Redis, so that a fleet of
// frontdoor replicas keeps one fleet-wide limit per stage.
//
// A Store is the fleet-wide counterpart of admit.Controller: every check and
// the reservation it permits run in one Lua script on the Redis server, so two
// replicas can never both see the last free slot or the last waiting place.
// The queue, every owner's generation and ordering history, the tombstones
// (bounded by Limits.Tombstones) and the ledger live in Redis under one key
// prefix, so a barge-in handled by one replica cancels that call's work
// queued through another. So do the per-tenant counts of queued work: a
// tenant's share of the queue (Limits.TenantWaiting) is checked and taken in
// the offer's script, and given back by whichever script removes the work
// from the queue (admission, expiry, Rotate, Forget, Cancel).
//
// Leases carry a TTL measured by the Redis server's clock and a fencing token
// from a monotonic counter. A Dispatcher renews the leases it holds from a
// goroutine owned by each lease; a replica that dies frees its leases only
// when their TTL runs out, and a holder that lost its lease is refused
// (stages.ErrFenced) when it tries to release or renew it.
//
// When Redis cannot be reached, admission fails closed: Offer and Submit
// return stages.Closed with an error wrapping admit.ErrUnavailable, and Ready
// reports the error for /readyz. See docs/FLEET.md for the failure model.
package redisstage
