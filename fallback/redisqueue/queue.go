// Package redisqueue is a fleet-wide callback and handoff queue on Redis
// Streams with a consumer group: bounded (a full queue refuses, checked in
// the same Lua script that appends), idempotent by (call, turn),
// acknowledged (XACK), and a ticket claimed by a worker that died is
// reclaimed by another worker (XAUTOCLAIM) once it has been idle long enough,
// so no ticket a caller was promised is lost.
package redisqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors callers branch on.
var (
	ErrFull        = errors.New("redisqueue: queue full")
	ErrEmpty       = errors.New("redisqueue: nothing to claim")
	ErrUnavailable = errors.New("redisqueue: redis unavailable")
)

// Options tune a Queue. Zero values take the defaults.
type Options struct {
	MaxLen    int           // unacknowledged entries at most; default 1000
	Group     string        // consumer group; default "workers"
	ClaimIdle time.Duration // a claim idle this long is reclaimable; default 30s
	DoneTTL   time.Duration // how long (call, turn) stays deduplicated after Ack; default 24h
}

// Queue is one named queue. Safe for concurrent use.
type Queue struct {
	rdb    redis.UniversalClient
	name   string
	stream string
	keys   string
	opt    Options
}

// Entry is one claimed ticket.
type Entry struct {
	ID        string // stream ID: the ticket
	Call      string
	Turn      string
	Payload   string
	Reclaimed bool // taken over from a worker that did not acknowledge it
}

// New returns the queue called name, creating its stream and consumer group
// when missing.
func New(ctx context.Context, rdb redis.UniversalClient, name string, opt Options) (*Queue, error) {
	if opt.MaxLen <= 0 {
		opt.MaxLen = 1000
	}
	if opt.Group == "" {
		opt.Group = "workers"
	}
	if opt.ClaimIdle <= 0 {
		opt.ClaimIdle = 30 * time.Second
	}
	if opt.DoneTTL <= 0 {
		opt.DoneTTL = 24 * time.Hour
	}
	q := &Queue{rdb: rdb, name: name, stream: "fdq:{" + name + "}:s", keys: "fdq:{" + name + "}:k:", opt: opt}
	err := rdb.XGroupCreateMkStream(ctx, q.stream, opt.Group, "0").Err()
	if err != nil && !isBusyGroup(err) {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, name, err)
	}
	return q, nil
}

func isBusyGroup(err error) bool {
	return err != nil && len(err.Error()) >= 9 && err.Error()[:9] == "BUSYGROUP"
}

// dedupe key: lengths keep ("a:b", "c") and ("a", "b:c") apart.
func (q *Queue) key(call, turn string) string {
	return q.keys + strconv.Itoa(len(call)) + ":" + call + ":" + turn
}

var enqueueScript = redis.NewScript(`
local existing = redis.call('GET', KEYS[2])
if existing then return {existing, 0} end
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return {'', -1} end
local id = redis.call('XADD', KEYS[1], '*', 'call', ARGV[2], 'turn', ARGV[3], 'payload', ARGV[4])
redis.call('SET', KEYS[2], id)
return {id, 1}
`)

// Enqueue appends a ticket for (call, turn) unless one exists, and returns
// its ID and whether it was created now. A full queue refuses with ErrFull;
// the check and the append are one script, so replicas cannot overfill it.
func (q *Queue) Enqueue(ctx context.Context, call, turn, payload string) (string, bool, error) {
	if call == "" || turn == "" {
		return "", false, fmt.Errorf("redisqueue: empty call or turn")
	}
	v, err := enqueueScript.Run(ctx, q.rdb, []string{q.stream, q.key(call, turn)}, q.opt.MaxLen, call, turn, payload).Slice()
	if err != nil {
		return "", false, fmt.Errorf("%w: %s: %w", ErrUnavailable, q.name, err)
	}
	id, _ := v[0].(string)
	switch n, _ := v[1].(int64); n {
	case -1:
		return "", false, fmt.Errorf("%w: %s holds %d", ErrFull, q.name, q.opt.MaxLen)
	case 0:
		return id, false, nil
	}
	return id, true, nil
}

// Claim gives consumer one ticket: first one whose claim has been idle for
// ClaimIdle (its worker died), else a new one, waiting up to block for it
// (block <= 0 does not wait). It returns ErrEmpty when there is none.
func (q *Queue) Claim(ctx context.Context, consumer string, block time.Duration) (Entry, error) {
	msgs, _, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: q.stream, Group: q.opt.Group, Consumer: consumer,
		MinIdle: q.opt.ClaimIdle, Start: "0-0", Count: 1,
	}).Result()
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %w", ErrUnavailable, q.name, err)
	}
	if len(msgs) > 0 {
		e := entry(msgs[0])
		e.Reclaimed = true
		return e, nil
	}
	if block <= 0 {
		block = -1 // go-redis: negative is a non-blocking read; zero would block forever
	}
	res, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: q.opt.Group, Consumer: consumer, Streams: []string{q.stream, ">"}, Count: 1, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return Entry{}, ErrEmpty
	}
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %w", ErrUnavailable, q.name, err)
	}
	if len(res) == 0 || len(res[0].Messages) == 0 {
		return Entry{}, ErrEmpty
	}
	return entry(res[0].Messages[0]), nil
}

func entry(m redis.XMessage) Entry {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	return Entry{ID: m.ID, Call: s("call"), Turn: s("turn"), Payload: s("payload")}
}

var ackScript = redis.NewScript(`
local n = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return n
`)

// Ack acknowledges e as done: it leaves the queue (freeing its place) and
// (call, turn) stays deduplicated for DoneTTL. It reports whether this call
// acknowledged it (false when already acknowledged, for instance by the
// worker that reclaimed it).
func (q *Queue) Ack(ctx context.Context, e Entry) (bool, error) {
	n, err := ackScript.Run(ctx, q.rdb, []string{q.stream, q.key(e.Call, e.Turn)}, q.opt.Group, e.ID, q.opt.DoneTTL.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrUnavailable, q.name, err)
	}
	return n == 1, nil
}

// Len reports the unacknowledged tickets.
func (q *Queue) Len(ctx context.Context) (int64, error) {
	n, err := q.rdb.XLen(ctx, q.stream).Result()
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrUnavailable, q.name, err)
	}
	return n, nil
}
