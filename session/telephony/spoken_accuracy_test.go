package telephony

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/fallback"
	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/espeak"
	"github.com/frontdoorhq/frontdoor/session/backend/pocketsphinx"
)

// answerRecognizer is the grammar recognizer frontdoor serve builds for the
// answers to an offer (cmd/frontdoor/backends).
func answerRecognizer(t testing.TB) *pocketsphinx.Recognizer {
	t.Helper()
	if !espeak.Available() || !pocketsphinx.Available() {
		t.Fatal("apt-get install espeak-ng pocketsphinx pocketsphinx-en-us (bash .ci/test does)")
	}
	r, err := pocketsphinx.New(pocketsphinx.Options{Phrases: fallback.AnswerPhrases})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// sayVoice returns espeak-ng's voice saying text at rate; at 8 kHz as a
// telephone line carries it (µ-law, decoded).
func sayVoice(t testing.TB, voice, text string, rate int) []int16 {
	t.Helper()
	out := espeakAt(t, voice, text, rate)
	if rate == 8000 {
		out = g711.DecodeMulaw(nil, g711.EncodeMulaw(nil, out))
	}
	return out
}

// answerOf is what a transcript answers: "callback", "handoff", "decline"
// or "" (nothing).
func answerOf(transcript string) string {
	if fallback.Declines(transcript) {
		return "decline"
	}
	switch fallback.SpokenAnswer(transcript) {
	case prompt.KindCallback:
		return "callback"
	case prompt.KindHandoff:
		return "handoff"
	}
	return ""
}

// Voices and phrasings of the accuracy measurement (docs/RECOGNIZERS.md).
var (
	accuracyVoices  = []string{"en-us", "en-gb", "en+m3", "en-us+f3"}
	accuracyAnswers = []struct{ answer, text string }{
		{"callback", "Yes, please call me back."},
		{"callback", "Call me back."},
		{"callback", "Please call me back."},
		{"handoff", "A person, please."},
		{"handoff", "I would like to speak to a person."},
		{"handoff", "Can I speak to someone?"},
		{"handoff", "A person please."},
		{"handoff", "Put me through to a person, please."},
		{"decline", "No, thank you."},
		{"decline", "No thanks."},
		{"decline", "No."},
		{"", "What are your opening hours?"},
		{"", "Hello, is anyone there?"},
		{"", "Can you hear me?"},
		{"", "I need to change my booking."},
	}
)

// TestSpokenAnswerAccuracy measures the answer recognizer: each phrasing
// said by each voice at 16 kHz and at 8 kHz µ-law, and what it was taken
// for. A miss is asked again; a wrong answer (a phrasing taken for another
// answer, or a sentence that answers nothing taken for one) is acted on.
// It fails below the measured floor: fewer than 80% understood (98 of 120 measured), or a
// wrong answer by a voice of the end-to-end tests (answerVoices; en-gb
// made two of 120, docs/RECOGNIZERS.md). The table goes to
// docs/RECOGNIZERS.md:
//
//	go test -v -run TestSpokenAnswerAccuracy ./session/telephony/
func TestSpokenAnswerAccuracy(t *testing.T) {
	t.Parallel()
	r := answerRecognizer(t)
	type key struct{ voice, answer string }
	right, total := map[key]int{}, map[key]int{}
	var wrong []string
	for _, v := range accuracyVoices {
		for _, a := range accuracyAnswers {
			for _, rate := range []int{16000, 8000} {
				text, err := r.Recognize(context.Background(), backend.Audio{Rate: rate, Samples: sayVoice(t, v, a.text, rate)})
				if err != nil {
					t.Fatal(err)
				}
				got := answerOf(text)
				k := key{fmt.Sprintf("%s %d kHz", v, rate/1000), a.answer}
				total[k]++
				if got == a.answer {
					right[k]++
				} else if got != "" {
					wrong = append(wrong, fmt.Sprintf("%s %q heard %q: %s", k.voice, a.text, text, got))
				}
				t.Logf("%-8s %2d kHz %-36q %-40q %s", v, rate/1000, a.text, text, got)
			}
		}
	}
	var b strings.Builder
	b.WriteString("| voice, rate | callback | handoff | decline | no answer |\n| --- | --- | --- | --- | --- |\n")
	sum, all := 0, 0
	for _, v := range accuracyVoices {
		for _, rate := range []int{16, 8} {
			vk := fmt.Sprintf("%s %d kHz", v, rate)
			fmt.Fprintf(&b, "| %s |", vk)
			for _, a := range []string{"callback", "handoff", "decline", ""} {
				k := key{vk, a}
				fmt.Fprintf(&b, " %d of %d |", right[k], total[k])
				sum, all = sum+right[k], all+total[k]
			}
			b.WriteString("\n")
		}
	}
	t.Logf("understood %d of %d\n%s", sum, all, b.String())
	if sum*100 < all*80 {
		t.Errorf("understood %d of %d, under 80%%", sum, all)
	}
	for _, w := range wrong {
		t.Logf("wrong answer: %s", w)
		if slices.ContainsFunc(answerVoices, func(v string) bool { return strings.HasPrefix(w, v+" ") }) {
			t.Errorf("wrong answer by a voice of the end-to-end tests: %s", w)
		}
	}
	if len(wrong) > 2 {
		t.Errorf("%d wrong answers, over the 2 measured", len(wrong))
	}
}
