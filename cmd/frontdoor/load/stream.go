package load

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// streamSlots is how many groups a streamer's frame period is cut into:
// callers are spread over them, so that the server is not sent every
// caller's frame at the same instant.
const streamSlots = 4

// streamer sends every streaming caller's frames (-stream-audio, of
// -frame-ms each) from a few goroutines, one per core, each with one
// ticker: a caller costs its writes and nothing else (no goroutine,
// ticker or timer of its own). Each goroutine's callers are on a wheel of
// streamSlots slots; at each tick (every frame / streamSlots) it writes
// one frame to each caller of the slot. A tick the goroutine could not take in time is dropped, as
// a caller's own ticker dropped it, so a stall is not followed by a burst.
//
// The writes take no context, so that coder/websocket arms no
// context.AfterFunc per frame: a write the server does not take blocks
// until it does or its caller closes the connection (which every caller
// does when it leaves).
type streamer struct {
	period time.Duration // a frame's length
	// frame is one frame of quiet PCM16 at 16 kHz. coder/websocket masks
	// a copy, so every write may share it.
	frame  []byte
	shards []*streamShard
	wg     sync.WaitGroup
	stop   context.CancelFunc
	sent   atomic.Int64 // frames written
}

type streamShard struct {
	mu    sync.Mutex
	slots [streamSlots][]*caller
	n     int // callers added so far, to spread them over the slots
}

// streamRate is the callers' audio rate: the server's default (16 kHz
// PCM16), as their hello declares no format.
const streamRate = 16000

// newStreamer starts a streamer of frames of period; stop ends its
// goroutines.
func newStreamer(period time.Duration) *streamer {
	ctx, stop := context.WithCancel(context.Background())
	s := &streamer{period: period, frame: make([]byte, int(2*streamRate*period/time.Second)),
		stop: stop, shards: make([]*streamShard, runtime.GOMAXPROCS(0))}
	for i := range s.shards {
		sh := &streamShard{}
		s.shards[i] = sh
		s.wg.Go(func() { sh.run(ctx, s.period, s.frame, &s.sent) })
	}
	return s
}

// close stops the streamer and waits for its goroutines.
func (s *streamer) close() {
	s.stop()
	s.wg.Wait()
}

// add starts sending c's frames on c.conn; remove stops it. A write in
// progress when remove is called may still finish.
func (s *streamer) add(c *caller) {
	sh := s.shards[c.rec.id%len(s.shards)]
	sh.mu.Lock()
	c.streamSlot = sh.n % streamSlots
	sh.n++
	sh.slots[c.streamSlot] = append(sh.slots[c.streamSlot], c)
	sh.mu.Unlock()
}

func (s *streamer) remove(c *caller) {
	sh := s.shards[c.rec.id%len(s.shards)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.removeLocked(c)
}

func (sh *streamShard) removeLocked(c *caller) {
	slot := sh.slots[c.streamSlot]
	for i, x := range slot {
		if x == c {
			last := len(slot) - 1
			slot[i], slot[last] = slot[last], nil
			sh.slots[c.streamSlot] = slot[:last]
			return
		}
	}
}

func (sh *streamShard) run(ctx context.Context, period time.Duration, frame []byte, sent *atomic.Int64) {
	t := time.NewTicker(period / streamSlots)
	defer t.Stop()
	var batch []*caller
	for k := 0; ; k = (k + 1) % streamSlots {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sh.mu.Lock()
		batch = append(batch[:0], sh.slots[k]...)
		sh.mu.Unlock()
		n := 0
		for i, c := range batch {
			if err := c.conn.Write(context.Background(), websocket.MessageBinary, frame); err != nil {
				sh.mu.Lock()
				sh.removeLocked(c) // the connection is gone: no more frames
				sh.mu.Unlock()
			} else {
				n++
			}
			batch[i] = nil
		}
		sent.Add(int64(n))
	}
}
