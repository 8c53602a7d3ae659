package segment_test

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/frontdoorhq/frontdoor/session/segment"
	"pgregory.net/rapid"
)

// split feeds text to a Splitter in deltas of n bytes (0: by words, as
// models stream them) and returns every segment, the flushed rest last.
func split(text string, n, maxLen int) []string {
	s := segment.Splitter{MaxLen: maxLen}
	var out []string
	for _, d := range deltas(text, n) {
		out = append(out, s.Push(d)...)
	}
	if rest := s.Flush(); rest != "" {
		out = append(out, rest)
	}
	return out
}

func deltas(text string, n int) []string {
	if n == 0 {
		var ds []string
		for i, w := range strings.SplitAfter(text, " ") {
			if i > 0 || w != "" {
				ds = append(ds, w)
			}
		}
		return ds
	}
	var ds []string
	for len(text) > 0 {
		k := min(n, len(text))
		for k < len(text) && !utf8.RuneStart(text[k]) {
			k++
		}
		ds = append(ds, text[:k])
		text = text[k:]
	}
	return ds
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
		// tokens: want holds when the text is streamed in words or whole;
		// split inside a mark ("." then "..") it may end a segment early,
		// and only the words are checked.
		tokens bool
	}{
		{"two sentences", "Hello there. How can I help you today?", []string{"Hello there.", "How can I help you today?"}, false},
		{"exclamation and question", "Great! Is that all? Yes.", []string{"Great!", "Is that all?", "Yes."}, false},
		{"decimal", "The rate is 3.5 percent. Anything else?", []string{"The rate is 3.5 percent.", "Anything else?"}, false},
		{"price", "It costs $12.99 a month.", []string{"It costs $12.99 a month."}, false},
		{"number ends a sentence", "We open at 9. Come by.", []string{"We open at 9.", "Come by."}, false},
		{"abbreviations", "Dr. Smith sees you at 4 p.m. on Mon. the 5th. Bring your card, e.g. a Visa.", []string{"Dr. Smith sees you at 4 p.m. on Mon. the 5th.", "Bring your card, e.g. a Visa."}, false},
		{"initials", "J. R. R. Tolkien wrote it. Next question.", []string{"J. R. R. Tolkien wrote it.", "Next question."}, false},
		{"numbered items", "1. Open the app\n2. Tap call", []string{"1. Open the app", "2. Tap call"}, false},
		{"closing quote", `He said "yes." Then he left.`, []string{`He said "yes."`, "Then he left."}, true},
		{"closing quote streamed alone", `He said "yes` + "\u201d" + `. Then he left.`, []string{`He said "yes` + "\u201d" + `.`, "Then he left."}, false},
		{"ellipsis", "Well... let me think. Okay.", []string{"Well...", "let me think.", "Okay."}, true},
		{"no punctuation at all", "sure thing I can do that for you", []string{"sure thing I can do that for you"}, false},
		{"empty", "", nil, false},
		{"only space", "   ", nil, false},
	}
	for _, tt := range tests {
		for _, n := range []int{0, 1, 3, 1000} {
			got := split(tt.text, n, 0)
			if tt.tokens && n%1000 != 0 {
				if a, b := spoken(got), spoken(tt.want); !slices.Equal(a, b) {
					t.Errorf("%s, deltas of %d: words %q, want %q", tt.name, n, a, b)
				}
				continue
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s, deltas of %d: got %q, want %q", tt.name, n, got, tt.want)
			}
		}
	}
}

// TestSplitLong: a sentence that runs on is cut at a clause, else at a
// word, never longer than the cap.
func TestSplitLong(t *testing.T) {
	text := "we have rooms on the first floor, rooms on the second floor and a suite at the top that looks over the harbour"
	got := split(text, 0, 40)
	for _, seg := range got {
		if len(seg) > 40 {
			t.Errorf("segment of %d bytes over the cap: %q", len(seg), seg)
		}
	}
	if got[0] != "we have rooms on the first floor," {
		t.Errorf("first cut %q, want it at the clause", got[0])
	}
	if strings.Join(got, " ") != text {
		t.Errorf("segments %q lose text", got)
	}
}

// TestEndHeldBackUntilDecided: "3." is held until the next delta shows
// whether it is a decimal; "word." is sent at once, so the first sentence
// is spoken without waiting for the next token.
func TestEndHeldBackUntilDecided(t *testing.T) {
	var s segment.Splitter
	if got := s.Push("I can help."); !slices.Equal(got, []string{"I can help."}) {
		t.Fatalf("a word's period: got %q, want the sentence at once", got)
	}
	if got := s.Push(" It is 3."); len(got) != 0 {
		t.Fatalf("a number's period: got %q, want it held", got)
	}
	if got := s.Push("5 degrees."); !slices.Equal(got, []string{"It is 3.5 degrees."}) {
		t.Fatalf("got %q", got)
	}
}

// TestSplitKeepsText: whatever the text and however it is streamed, the
// segments are the text's words in order, none empty or over the cap.
func TestSplitKeepsText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		words := rapid.SliceOf(rapid.SampledFrom([]string{"hello", "3.5", "Dr.", "end.", "why?", "so,", "J.", "1.", "\n", "…", "wow!", "é", "a"})).Draw(t, "words")
		text := strings.Join(words, " ")
		n := rapid.IntRange(0, 7).Draw(t, "delta")
		got := split(text, n, 40)
		for _, seg := range got {
			if strings.TrimSpace(seg) == "" || len(seg) > 40 && !strings.Contains(seg, " ") {
				t.Fatalf("bad segment %q in %q", seg, got)
			}
		}
		if a, b := spoken(got), spoken([]string{text}); !slices.Equal(a, b) {
			t.Fatalf("segments %q of %q lose or reorder words", got, text)
		}
	})
}

// spoken is the words of segs that have a letter or digit, marks trimmed.
func spoken(segs []string) []string {
	var words []string
	for _, w := range strings.Fields(strings.Join(segs, " ")) {
		w = strings.Trim(w, ".!?…\"'”)")
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			words = append(words, w)
		}
	}
	return words
}
