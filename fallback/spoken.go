package fallback

import (
	"slices"
	"strings"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
)

// personWords name a person in a spoken answer.
var personWords = []string{"person", "human", "someone", "somebody", "operator", "agent"}

// SpokenAnswer returns the fallback a caller's words ask for, in answer to
// an offer: prompt.KindCallback for "call me back" (also "callback", "ring me
// back"), prompt.KindHandoff for "a person" (also a human, someone, an
// operator). It returns "" for anything else, for words that ask for both,
// and for a refusal ("no", "don't"): an unclear answer is no answer, as a
// key not on offer is.
func SpokenAnswer(transcript string) prompt.Kind {
	words := strings.FieldsFunc(strings.ToLower(transcript), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r == '\'')
	})
	if slices.ContainsFunc(words, func(w string) bool {
		return w == "no" || w == "not" || w == "don't" || w == "dont" || w == "never"
	}) {
		return ""
	}
	back := slices.Contains(words, "callback")
	for i, w := range words {
		if (w == "call" || w == "ring") && slices.Contains(words[i+1:], "back") {
			back = true
		}
	}
	person := slices.ContainsFunc(words, func(w string) bool { return slices.Contains(personWords, w) })
	switch {
	case back && !person:
		return prompt.KindCallback
	case person && !back:
		return prompt.KindHandoff
	}
	return ""
}
