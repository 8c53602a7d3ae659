package refusal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/refusal"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// sent is a Sender that keeps what it is sent.
type sent struct{ msgs []wire.Message }

func (s *sent) Send(_ context.Context, m wire.Message) error { s.msgs = append(s.msgs, m); return nil }
func (s *sent) SendAudio(context.Context, string, *wire.PromptMsg, backend.Audio) error {
	return nil
}
func (s *sent) Keypad() func([]string) []string { return nil }
func (s *sent) Hold(time.Duration) func()       { return func() {} }

// The minimal Fallback tells each refusal in one prompt message: the
// prompt table's sentence for its stage and disposition, a failure as
// failed, and never an offer.
func TestPromptsRefused(t *testing.T) {
	tests := []struct {
		r      refusal.Refusal
		reason string
	}{
		{refusal.Refusal{Stage: "session", Disposition: stages.Expired}, "expired"},
		{refusal.Refusal{Stage: "model", Turn: "t1", Disposition: stages.Overloaded}, "overloaded"},
		{refusal.Refusal{Stage: "synthesis", Turn: "t1", Reason: "unavailable", Started: true}, wire.TurnFailed},
	}
	for _, tt := range tests {
		out := &sent{}
		refusal.Prompts{}.Refused(context.Background(), tt.r, out)
		if len(out.msgs) != 1 {
			t.Fatalf("%+v: %d messages, want one prompt", tt.r, len(out.msgs))
		}
		p, ok := out.msgs[0].(*wire.PromptMsg)
		if !ok || p.Stage != tt.r.Stage || p.Reason != tt.reason || p.Text == "" || p.Text != refusal.PromptText(tt.r) {
			t.Errorf("%+v: sent %+v, want a %s prompt with the table's sentence", tt.r, out.msgs[0], tt.reason)
		}
	}
	if _, ok := (refusal.Prompts{}).SpokenAnswer("c", "a person please"); ok {
		t.Error("the minimal Fallback took an answer to an offer it never made")
	}
}

func ExamplePromptText() {
	fmt.Println(refusal.PromptText(refusal.Refusal{Stage: "session", Disposition: stages.Expired}))
	// Output: I am sorry, no line came free while you waited, so I cannot take your call right now. Please try again in a few minutes.
}
