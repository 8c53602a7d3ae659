package outbound

import (
	"context"

	"github.com/frontdoorhq/frontdoor/session/wire"
)

// Speech has a premise. Every prompt is spoken for a state of the call:
// queued for a line, refused, offered a fallback, booked. The call keeps a
// premise number that moves whenever its state does; prompt audio is
// queued with the premise it was spoken for, and the writer checks it
// before each write exactly as it checks a reply's generation. So the
// moment a queued caller is admitted or its wait expires, or an offer is
// answered, the rest of the prompt spoken for the old state is cut (its
// audio_end closes it, marked cut) and the next prompt follows. Control
// messages never wait behind audio at all (the outbound queue's control
// lane), so the message that says the state changed is on the wire when
// the change happens.
//
// An `offer` belongs to the prompt it follows: it is queued with that
// prompt's premise, only while no other change came since the prompt
// (Push returns ErrPremiseGone otherwise), and the writer drops it if the
// premise has ended by the time it would be written. So no caller is ever
// offered a callback or a person for a state of the call that is over.

// cutPrompt reports whether f is prompt audio whose premise has ended and
// is not to be written as it is; an error is a failed write. The audio_end of a prompt whose audio_start was
// written is not dropped: it is written with the audio actually sent and
// cut set, so that every audio_start the caller saw is closed.
func (o *Queue) cutPrompt(ctx context.Context, f Frame) (bool, error) {
	if f.Premise == 0 || f.Premise == o.premise.Load() {
		return false, nil
	}
	w := &o.w
	if !f.End || w.prompt != f.Premise { // (an offer of a prompt whose premise ended is dropped here too)
		o.nCut.Add(1)
		return true, nil
	}
	w.prompt = 0
	// The caller's playback is not cleared (the call's Line.Interrupting): the
	// writer keeps at most the pacing lead ahead of it, and a transport's
	// clear would also drop lines it queued itself (a keypad menu's).
	// The message that moved the premise was queued as it moved: it goes
	// first, so that the caller learns why before the audio ends.
	if err := o.writeControl(ctx); err != nil {
		return true, err
	}
	if m, ok := f.Msg.(*wire.AudioEndMsg); ok {
		m.AudioMS, m.Cut = w.promptUS/1000, true
	}
	return true, o.send(ctx, f, o.w.clock.Now())
}

// notePrompt follows the prompt audio written, for cutPrompt.
func (w *writerState) notePrompt(f Frame) {
	switch {
	case f.End:
		w.prompt = 0
	case f.Audio != nil:
		w.promptUS += f.US
	default: // audio_start
		w.prompt, w.promptUS = f.Premise, 0
	}
}
