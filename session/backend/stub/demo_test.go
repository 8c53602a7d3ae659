package stub

import (
	"context"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

func TestDemoAnswer(t *testing.T) {
	for turn, want := range map[string]string{
		"hello can you hear me":                DemoGreeting,
		"Good morning!":                        DemoGreeting,
		"what are your opening hours":          DemoHours,
		"are you open on saturday":             DemoHours,
		"please call me back tomorrow morning": DemoCallback,
		"i would like a callback":              DemoCallback,
		"a person please":                      DemoPerson,
		"can you call someone back to me":      DemoPerson,
		"i want to speak to a human":           DemoPerson,
		"thank you goodbye":                    DemoGoodbye,
		"i am calling about my order":          DemoUnknown,
		"":                                     DemoUnknown,
		"heard 1200 ms":                        DemoUnknown,
	} {
		if got := DemoAnswer(turn); got != want {
			t.Errorf("DemoAnswer(%q) = %q, want %q", turn, got, want)
		}
	}
	// Every answer says plainly it is a demo, or ends the call.
	for _, a := range []string{DemoGreeting, DemoHours, DemoCallback, DemoPerson, DemoUnknown} {
		if !strings.Contains(a, "demo agent") {
			t.Errorf("%q does not say it is a demo agent", a)
		}
	}
}

func TestDemoModelStreamsTheScript(t *testing.T) {
	m := NewModel(Settings{Demo: true, Tokens: 3})
	defer m.Close()
	var got strings.Builder
	err := m.Reply(context.Background(), backend.Turn{Text: "what are your opening hours"}, func(d string) error {
		got.WriteString(d)
		return nil
	})
	if err != nil || got.String() != DemoHours {
		t.Fatalf("reply %q, %v; want %q", got.String(), err, DemoHours)
	}
}
