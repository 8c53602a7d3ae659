package stub

import (
	"slices"
	"strings"
)

// The demo agent's script: what a stub model with Settings.Demo says. It
// names itself a demo agent and claims nothing it does not do: it books no
// callback and has no one to put a caller through to (frontdoor's own
// offers do, when a stage refuses the caller).
const (
	DemoGreeting = "Hello, you are talking to frontdoor's demo agent, a small script and not a real assistant. " +
		"You can ask about our opening hours, ask us to call you back, or ask for a person."
	DemoHours = "We are open from nine in the morning to five in the afternoon, Monday to Friday. " +
		"I am a demo agent, so those hours are only an example."
	DemoCallback = "I am a demo agent, so I cannot book a callback myself. " +
		"When our lines are busy, frontdoor offers you a real callback instead."
	DemoPerson = "I am a demo agent, not a person, and there is no one here to put you through to. " +
		"When our lines are busy, frontdoor offers to find you a person."
	DemoGoodbye = "Thank you for calling. Goodbye."
	DemoUnknown = "I am a demo agent with a small script, so I did not understand that. " +
		"You can say hello, ask about our opening hours, ask us to call you back, or ask for a person."
)

// demoRules are tried in order; the first whose any word is in the turn
// answers.
var demoRules = []struct {
	words  []string
	answer string
}{
	{[]string{"person", "human", "someone", "operator", "somebody", "agent"}, DemoPerson},
	{[]string{"callback", "ring"}, DemoCallback},
	{[]string{"hours", "open", "opening", "close", "closed"}, DemoHours},
	{[]string{"bye", "goodbye"}, DemoGoodbye},
	{[]string{"hello", "hi", "hey", "morning", "afternoon", "evening"}, DemoGreeting},
	{[]string{"thanks", "thank"}, DemoGoodbye},
}

// DemoAnswer returns the demo agent's answer to a caller's turn.
func DemoAnswer(turn string) string {
	words := strings.FieldsFunc(strings.ToLower(turn), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r == '\'')
	})
	// "call me back", "call back": the two words, not "call" alone (a
	// caller says "I am calling about...").
	if i := slices.Index(words, "call"); i >= 0 && slices.Contains(words[i:], "back") && !slices.ContainsFunc(words, isPersonWord) {
		return DemoCallback
	}
	for _, r := range demoRules {
		if slices.ContainsFunc(words, func(w string) bool { return slices.Contains(r.words, w) }) {
			return r.answer
		}
	}
	return DemoUnknown
}

func isPersonWord(w string) bool { return slices.Contains(demoRules[0].words, w) }
