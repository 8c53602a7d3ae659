package fallback

import (
	"testing"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
)

func TestSpokenAnswer(t *testing.T) {
	for text, want := range map[string]prompt.Kind{
		"please call me back tomorrow morning": prompt.KindCallback,
		"Call me back.":                        prompt.KindCallback,
		"i would like a callback":              prompt.KindCallback,
		"ring me back":                         prompt.KindCallback,
		"a person please":                      prompt.KindHandoff,
		"i would like to speak to a person":    prompt.KindHandoff,
		"an operator":                          prompt.KindHandoff,
		"no don't call me back":                "",
		"not a person":                         "",
		"have someone call me back":            "",
		"what are your opening hours":          "",
		"i am calling about my order":          "",
		"back to the call":                     "",
		"":                                     "",
	} {
		if got := SpokenAnswer(text); got != want {
			t.Errorf("SpokenAnswer(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestDeclines(t *testing.T) {
	for text, want := range map[string]bool{
		"no thanks":             true,
		"No, thank you.":        true,
		"no":                    true,
		"no call me back":       false,
		"no a person":           false,
		"yes please":            false,
		"i know":                false,
		"":                      false,
		"nope":                  true,
		"not now":               false,
		"call me back":          false,
		"hello is anyone there": false,
	} {
		if got := Declines(text); got != want {
			t.Errorf("Declines(%q) = %v, want %v", text, got, want)
		}
	}
}
