package wire

// What the call engine records on a message as it queues it: not part of
// the JSON, and set only by the engine (session's outbound queue), which
// is in another package, hence the exported setters. A message no call
// queued has the zero values: nothing to wait for, no premise.

// Barrier is the outbound queue's mark on a control message that a
// transport may follow with audio of its own (an offer, a fallback
// outcome, an error): control messages overtake queued audio, so the
// transport waits on AudioBefore before it speaks.
type Barrier struct{ ch chan struct{} }

// closed stands for "nothing to wait for".
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// AudioBefore is closed once the audio the call had queued when the
// message was queued has been handed to the transport (or dropped, or
// never will be: the call's writer stopped). It is closed already for a
// message queued behind no audio, and for one no call queued.
func (b *Barrier) AudioBefore() <-chan struct{} {
	if b.ch == nil {
		return closed
	}
	return b.ch
}

// Arm is called by the call's outbound queue as it queues the message.
// With no audio pending before it, AudioBefore is closed at once and Arm
// returns nil; otherwise Arm returns the channel the queue closes once
// that audio has been handed over.
func (b *Barrier) Arm(pending bool) chan struct{} {
	if !pending {
		b.ch = closed
		return nil
	}
	b.ch = make(chan struct{})
	return b.ch
}

// Stamp is the call's premise a PromptMsg was queued under (session's
// premise.go): prompt audio sent later for that prompt is cut once the
// state it was spoken for has ended.
type Stamp struct{ premise uint64 }

// Premise is the premise the prompt was queued under; 0 until queued.
func (s *Stamp) Premise() uint64 { return s.premise }

// SetPremise is called by the call's outbound queue as it queues the
// prompt.
func (s *Stamp) SetPremise(p uint64) { s.premise = p }
