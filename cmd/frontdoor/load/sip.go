package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/frontdoorhq/frontdoor/media/sip"
)

// A SIP caller places a real SIP call (media/sip's Dial: an INVITE with a
// PCMU/PCMA offer, RTP both ways) to the server's -sip-listen address and
// talks as a Twilio caller does (twilioCaller: the same conversation,
// turns, barge-in and inferences), since the two wires tell a caller as
// little: audio, and the end of the call. What SIP tells even less of is
// read from the RTP itself:
//
//   - The end of a reply. SIP has no marks: a talkspurt (frames arriving)
//     that stops for sipSpurtGap has ended, and counts as a mark echoed
//     once played. A reply with a pause longer than that inside it is
//     taken as two utterances.
//   - Barge-in. There is no clear: a talkspurt that stops while the caller
//     is speaking was cleared; frames that arrive after it, while the
//     barge-in goes on, are stale. A reply that happens to end as the
//     caller starts to speak over it counts as cleared.
//   - Refusal. The server answers a refused caller, plays its prompt and
//     hangs up (BYE): a BYE before any reply has played is the session
//     stage's refusal, as a Twilio close with 1013 is.
type sipCaller struct {
	*twilioCaller
	uri string
	out *sip.Outgoing
}

// sipSpurtGap is the silence that ends a talkspurt of reply audio: frames
// come every 20 ms while the server sends.
const sipSpurtGap = 200 * time.Millisecond

// sipLead is how much of the caller's audio waits in its RTP sender: the
// line is never empty, as a phone's microphone never is.
const sipLead = 40 * time.Millisecond

// sipWire is what the conversation sends besides audio: nothing for a
// mark (SIP has none), a BYE for stop.
type sipWire struct{ c *sipCaller }

func (w sipWire) echo(string) error { return nil }

func (w sipWire) sendStop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.c.out.Hangup(ctx)
}

// run places the call, talks until the conversation ends and hangs up.
// Every goroutine it starts ends before it returns.
func (c *sipCaller) run(ctx context.Context) {
	c.rec.started = time.Now()
	c.stats.offered.Add(1)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	out, err := sip.Dial(dctx, c.uri, sip.DialConfig{From: fmt.Sprintf("+155501%02d", c.rec.id%100),
		Username: c.cfg.SIPUser, Password: c.cfg.SIPPassword})
	cancel()
	if err != nil {
		c.rec.answered = errors.Is(err, sip.ErrRefused)
		c.finish(EndError, fmt.Sprintf("dial: %v", err))
		if ctx.Err() != nil {
			c.rec.end = EndQueued
		}
		return
	}
	defer out.Close()
	c.out, c.rec.answered = out, true
	c.rec.connected = time.Now()
	c.start = c.rec.connected
	c.stats.active.Add(1)
	defer c.stats.active.Add(-1)
	c.wire = sipWire{c}

	c.in = make(chan twEvent, 64)
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	rctx, stopRead := context.WithCancel(context.Background())
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		c.read(rctx)
	}()
	lctx, stop := context.WithCancel(context.Background())
	lineDone := make(chan struct{})
	go func() {
		defer close(lineDone)
		c.stream(lctx)
	}()
	stopped := false
	c.stopLine = func() {
		if !stopped {
			stopped = true
			stop()
			<-lineDone
		}
	}
	defer func() {
		c.stopLine()
		out.Close() // ends the media: the reader's Frames close
		stopRead()
		<-readDone
	}()
	c.converse(ctx)
}

// stream keeps sipLead of the caller's audio, speech or silence, queued in
// its RTP sender, which sends it in real time, until ctx ends.
func (c *sipCaller) stream(ctx context.Context) {
	t := time.NewTicker(frame)
	defer t.Stop()
	for {
		for c.out.Buffered() < sipLead {
			var utt int
			ahead := c.out.Buffered()
			c.ulaw, utt = c.line.next(c.ulaw[:0], &c.pcm)
			if err := c.out.WriteMulaw(c.ulaw); err != nil {
				return
			}
			c.line.sent(utt, time.Now().Add(ahead+frame)) // when its last sample leaves
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// read turns the call's RTP into the events of a Twilio caller: a frame is
// media, the end of a talkspurt a mark (or a clear, while the caller
// speaks), and the call's end closes the channel, after noting a server's
// BYE as the close that refuses (1013). It ends with the call, or with ctx
// once nobody reads.
func (c *sipCaller) read(ctx context.Context) {
	defer close(c.in)
	gap := time.NewTimer(time.Hour)
	gap.Stop()
	defer gap.Stop()
	frames := c.out.Frames()
	var last time.Time
	spurts := 0
	send := func(ev twEvent) bool {
		select {
		case c.in <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				<-c.out.Done()
				if errors.Is(c.out.Err(), sip.ErrRemoteHangup) {
					c.rec.closeCode = 1013 // read once the channel has closed
				}
				return
			}
			last = time.Now()
			if !send(twEvent{at: last, kind: twMedia, n: len(f.Payload)}) {
				return
			}
			gap.Reset(sipSpurtGap)
		case <-gap.C:
			spurts++
			ev := twEvent{at: last.Add(frame), kind: twMark, mark: fmt.Sprintf("spurt-%d", spurts)}
			if c.line.speaking() {
				ev.kind = twClear
			}
			if !send(ev) {
				return
			}
		}
	}
}

// speaking reports whether an utterance is still being said.
func (l *line) speaking() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.left > 0
}

// sipURI is the request URI the SIP callers dial: tenant "load" at the
// server's SIP address, refusing a non-loopback host unless allowRemote.
func sipURI(addr string, allowRemote bool) (string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		host, port, serr := net.SplitHostPort(addr)
		if serr != nil || host != "localhost" {
			return "", fmt.Errorf("%w: -sip-target %q: want ip:port", ErrBadConfig, addr)
		}
		ap, err = netip.ParseAddrPort("127.0.0.1:" + port)
		if err != nil {
			return "", fmt.Errorf("%w: -sip-target %q: %v", ErrBadConfig, addr, err)
		}
	}
	if !allowRemote && !ap.Addr().IsLoopback() {
		return "", fmt.Errorf("-sip-target %q: %w", addr, ErrRemoteTarget)
	}
	return "sip:load@" + ap.String(), nil
}

// sipAddr is the SIP address to dial: SIPTarget, or the HTTP target's host
// at port 5060.
func (c Config) sipAddr(base string) string {
	if c.SIPTarget != "" {
		return c.SIPTarget
	}
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(u.Hostname(), "5060")
}
