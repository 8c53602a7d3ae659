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

// Declines reports whether a caller's words turn an offer down: "no
// thanks", "no thank you", "no". Words that also ask for a fallback ("no,
// call me back") are not a decline.
func Declines(transcript string) bool {
	words := strings.FieldsFunc(strings.ToLower(transcript), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r == '\'')
	})
	if len(words) == 0 || !slices.Contains(words, "no") && !slices.Contains(words, "nope") {
		return false
	}
	for i, w := range words {
		if w == "callback" || slices.Contains(personWords, w) || (w == "call" || w == "ring") && slices.Contains(words[i+1:], "back") {
			return false
		}
	}
	return true
}

// AnswerPhrases are what a caller may say to answer an offer, as JSGF
// alternatives (words, [optional words], (a | b)): the grammar of the
// answer recognizer that listens while an offer waits (package
// session/backend/pocketsphinx, Options.Phrases). Each one SpokenAnswer or
// Declines takes.
var AnswerPhrases = []string{
	"[yes | yes please | okay | please | i would like | i want | i would like to speak to | can i speak to | put me through to | speak to | talk to] " +
		"(call me back | call back | ring me back | a callback | a person | someone | somebody | a human | an operator | an agent) " +
		"[please | thanks | thank you]",
	"no thanks | no thank you | no",
}
