package session

import (
	"context"
	"time"

	"github.com/frontdoorhq/frontdoor/session/wire"
)

// interruptPlayback stops the caller's playback on transports that
// declare Capabilities.Interrupt (the writer calls it before it sends
// `interrupted`), and reports what of speaking's reply was heard; nil
// leaves the estimate from the audio sent.
func (c *Call) interruptPlayback(ctx context.Context, speaking *turn) *wire.Heard {
	if c.caps.Interrupt == nil {
		return nil
	}
	id := ""
	if speaking != nil {
		id = speaking.id
	}
	played, ok := c.caps.Interrupt(ctx, id)
	if !ok || speaking == nil {
		return nil
	}
	return speaking.heardUpTo(played)
}

// heardUpTo is heard with the playback position a transport reported in
// place of the audio written.
func (t *turn) heardUpTo(played time.Duration) *wire.Heard {
	return t.heardAt(min(played.Microseconds(), t.sentUS.Load()))
}
