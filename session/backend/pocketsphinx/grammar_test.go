package pocketsphinx

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestGrammar: a grammar recognizer hears its phrases and decodes other
// speech as filler, never as a phrase.
func TestGrammar(t *testing.T) {
	r := newRecognizer(t, Options{Phrases: []string{"[yes | i would like to speak to] (call me back | a person) [please]", "no thanks"}})
	for text, want := range map[string]string{
		"Yes, please call me back.":          "call me back",
		"I would like to speak to a person.": "a person",
		"What are your opening hours?":       "what are your opening hours",
	} {
		got, err := r.Recognize(context.Background(), speak(t, text))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%q: %q", text, got)
		if !strings.Contains(got, want) {
			t.Errorf("%q heard as %q, want %q in it", text, got, want)
		}
	}
}

func TestGrammarRejectsBadPhrases(t *testing.T) {
	for _, p := range []string{"call <me> back", "(a person", "a person]", "Call Me", "x;y", "zzqx"} {
		_, err := New(Options{Phrases: []string{p}})
		if err == nil {
			t.Errorf("phrase %q accepted", p)
		}
		if p != "zzqx" && !errors.Is(err, ErrPhrase) {
			t.Errorf("phrase %q: %v, want ErrPhrase", p, err)
		}
	}
	if _, err := New(Options{Phrases: make([]string, MaxPhrases+1)}); err == nil {
		t.Error("too many phrases accepted")
	}
}
