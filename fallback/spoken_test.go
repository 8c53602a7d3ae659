package fallback

import "testing"

func TestSpokenAnswer(t *testing.T) {
	for text, want := range map[string]Kind{
		"please call me back tomorrow morning": KindCallback,
		"Call me back.":                        KindCallback,
		"i would like a callback":              KindCallback,
		"ring me back":                         KindCallback,
		"a person please":                      KindHandoff,
		"i would like to speak to a person":    KindHandoff,
		"an operator":                          KindHandoff,
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
