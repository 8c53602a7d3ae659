package pocketsphinx

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A grammar recognizer (Options.Phrases) hears a few phrases and nothing
// else: the decoder searches a JSGF grammar of those phrases instead of a
// language model, so a short answer ("a person, please") is not mistaken
// for the nearest sentence of a corpus ("good a real"). Speech outside the
// phrases still has to be decoded as something, and a grammar of answers
// alone turns "is anyone there" into "no": so the grammar also holds whole
// sentences that answer nothing (Options.Filler, by default what callers
// say at a front desk), and an utterance is a run of phrases and filler
// sentences. Single filler words would not do: short words absorb any
// speech, answers included (measured: docs/RECOGNIZERS.md). The search is
// small (some fifty words), so a decoding costs little more than the
// process start.

// defaultFiller are sentences a caller says that answer no offer.
var defaultFiller = []string{
	"hello", "hi", "hello is anyone there", "is anyone there", "can you hear me",
	"what are your opening hours", "are you open today", "what time is it",
	"i want to book a table", "where is my order", "good morning", "how are you",
}

// MaxPhrases bounds a grammar's phrases and filler sentences together.
const MaxPhrases = 256

// maxPhraseLen bounds one phrase of a grammar (bytes).
const maxPhraseLen = 1024

// ErrPhrase is returned for a phrase that is not a JSGF alternative of
// plain words (lower-case letters, apostrophes, [ ] ( ) |).
var ErrPhrase = errors.New("pocketsphinx: a phrase must be words, [optional], (a | b)")

// checkPhrase checks that p holds only words and JSGF's grouping, with
// brackets balanced.
func checkPhrase(p string) error {
	if len(p) > maxPhraseLen {
		return fmt.Errorf("%w: %d bytes, over %d", ErrPhrase, len(p), maxPhraseLen)
	}
	var open []rune
	for _, r := range p {
		switch {
		case r >= 'a' && r <= 'z', r == '\'', r == ' ', r == '|':
		case r == '[', r == '(':
			open = append(open, r)
		case r == ']', r == ')':
			want := '['
			if r == ')' {
				want = '('
			}
			if len(open) == 0 || open[len(open)-1] != want {
				return fmt.Errorf("%w: %q unbalanced", ErrPhrase, p)
			}
			open = open[:len(open)-1]
		default:
			return fmt.Errorf("%w: %q has %q", ErrPhrase, p, r)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("%w: %q unbalanced", ErrPhrase, p)
	}
	return nil
}

// writeGrammar writes the JSGF grammar of phrases and filler, and the
// dictionary of its words, into dir, returning their paths. Every word
// must be in the dictionary.
func writeGrammar(dir, dict string, phrases, filler []string) (jsgfPath, dictPath string, err error) {
	if len(phrases)+len(filler) > MaxPhrases {
		return "", "", fmt.Errorf("%d phrases and filler sentences, over %d", len(phrases)+len(filler), MaxPhrases)
	}
	want := map[string]bool{}
	for _, p := range append(slices.Clone(phrases), filler...) {
		if err := checkPhrase(p); err != nil {
			return "", "", err
		}
		for _, w := range Words(p) {
			want[w] = true
		}
	}
	entries, err := loadDict(dict, want)
	if err != nil {
		return "", "", err
	}
	for _, e := range entries {
		w, _, _ := strings.Cut(e, " ")
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i]
		}
		delete(want, w)
	}
	if len(want) > 0 {
		missing := slices.Sorted(maps.Keys(want))
		return "", "", fmt.Errorf("words not in the dictionary: %v", missing)
	}
	var g strings.Builder
	g.WriteString("#JSGF V1.0;\ngrammar answers;\npublic <utterance> = <item>+;\n<item> = <phrase>")
	if len(filler) > 0 {
		g.WriteString(" | <filler>")
	}
	g.WriteString(";\n<phrase> = (" + strings.Join(phrases, ") | (") + ");\n")
	if len(filler) > 0 {
		g.WriteString("<filler> = (" + strings.Join(filler, ") | (") + ");\n")
	}
	jsgfPath = filepath.Join(dir, "answers.gram")
	dictPath = filepath.Join(dir, "answers.dict")
	if err := os.WriteFile(jsgfPath, []byte(g.String()), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(dictPath, []byte(strings.Join(entries, "\n")+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return jsgfPath, dictPath, nil
}
