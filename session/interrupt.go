package session

import (
	"context"
	"strings"
	"time"
)

// interruptPlayback stops the caller's playback on transports that
// declare Capabilities.Interrupt (the writer calls it before it sends
// `interrupted`), and reports what of speaking's reply was heard; nil
// leaves the estimate from the audio sent.
func (c *Call) interruptPlayback(ctx context.Context, speaking *turn) *Heard {
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
// place of the audio written: the words are cut at the same share of the
// synthesized audio.
func (t *turn) heardUpTo(played time.Duration) *Heard {
	us := min(played.Microseconds(), t.sentUS.Load())
	made := t.synthUS.Load()
	h := &Heard{Turn: t.id, AudioMS: us / 1000}
	if us <= 0 || made <= 0 {
		return h
	}
	words := strings.Fields(t.replyText())
	n := int((int64(len(words))*us + made - 1) / made)
	h.Text = strings.Join(words[:min(n, len(words))], " ")
	return h
}
