// Package segment splits a model's streamed reply into the pieces a
// synthesizer speaks one by one: sentences, as soon as each is complete,
// so that the caller hears the first while the rest is still being
// written. A sentence that runs on is cut at a clause, or failing that at
// a word, once it is longer than a cap; abbreviations, initials, decimals
// and numbered items are not taken for sentence ends.
package segment

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxLen is the longest segment, in bytes, cut at a clause or word
// when no sentence end comes sooner: about ten seconds of speech, so that
// a model that never punctuates is still heard while it writes.
const DefaultMaxLen = 160

// Splitter turns a stream of text deltas into segments. The zero value
// splits at sentence ends with DefaultMaxLen; it is not safe for
// concurrent use.
type Splitter struct {
	// MaxLen caps a segment's length in bytes (0: DefaultMaxLen).
	MaxLen int

	buf  strings.Builder
	scan int // bytes of buf already known to hold no segment end
}

// Push adds a delta and returns the segments it completed, in order,
// trimmed of surrounding space; punctuation alone is no segment. A sentence end at the very end of the
// text so far is held back when it may yet turn out not to be one (a
// decimal point, say) until the next delta or Flush decides.
func (s *Splitter) Push(delta string) []string {
	s.buf.WriteString(delta)
	var out []string
	for {
		text := s.buf.String()
		cut, ok := s.next(text)
		if !ok {
			return out
		}
		if seg := speakable(text[:cut]); seg != "" {
			out = append(out, seg)
		}
		rest := strings.TrimLeftFunc(text[cut:], unicode.IsSpace)
		s.buf.Reset()
		s.buf.WriteString(rest)
		s.scan = 0
	}
}

// Flush returns what is left as the last segment ("" when only space is
// left) and resets s for another reply.
func (s *Splitter) Flush() string {
	seg := speakable(s.buf.String())
	s.buf.Reset()
	s.scan = 0
	return seg
}

// speakable is seg trimmed of space and of closing marks that a delta
// carried after the end before them was decided; "" when nothing in it is
// spoken (a stray "..").
func speakable(seg string) string {
	seg = strings.TrimLeftFunc(strings.TrimSpace(seg), func(r rune) bool { return isCloser(r) || unicode.IsSpace(r) })
	if strings.IndexFunc(seg, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return ""
	}
	return seg
}

// next finds the end of the first complete segment of text.
func (s *Splitter) next(text string) (int, bool) {
	for i := s.scan; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		end := i + n
		if isTerminator(r) {
			// A run of terminators and closing marks ends together:
			// "Really?!" and `"Yes."` are one end each.
			for end < len(text) {
				r2, n2 := utf8.DecodeRuneInString(text[end:])
				if !isTerminator(r2) && !isCloser(r2) {
					break
				}
				end += n2
			}
			if end == len(text) {
				if r != '.' {
					return end, true
				}
				if !mayGoOn(text[:i]) {
					return end, true
				}
				// "3." may be "3.5", "p." may be "p.m.", "." may be
				// "...": the next delta (or Flush) decides.
				s.scan = i
				return 0, false
			}
			if next, _ := utf8.DecodeRuneInString(text[end:]); unicode.IsSpace(next) && !(r == '.' && notAnEnd(text[:i])) {
				return end, true
			}
		} else if r == '\n' && i > 0 && strings.TrimSpace(text[:i]) != "" {
			return end, true // a line break ends a list item or paragraph
		}
		i = end
	}
	s.scan = len(text)
	if max := s.maxLen(); len(text) > max {
		return cutLong(text, max), true
	}
	return 0, false
}

func (s *Splitter) maxLen() int {
	if s.MaxLen > 0 {
		return s.MaxLen
	}
	return DefaultMaxLen
}

// cutLong cuts text longer than max at its last clause mark within max,
// else at its last space within max, else at max.
func cutLong(text string, max int) int {
	head := text[:max]
	if i := strings.LastIndexAny(head, ",;:—–"); i > max/3 {
		_, n := utf8.DecodeRuneInString(head[i:])
		return i + n
	}
	if i := strings.LastIndexFunc(head, unicode.IsSpace); i > 0 {
		return i
	}
	for max > 0 && !utf8.RuneStart(text[max]) {
		max--
	}
	return max
}

func isTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', '…', '。', '！', '？':
		return true
	}
	return false
}

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '”', '’', '»':
		return true
	}
	return false
}

// wordBefore is the word that ends text (letters, digits and inner
// periods: "e.g", "U.S", "3").
func wordBefore(text string) string {
	i := strings.LastIndexFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.')
	})
	return text[i+1:]
}

// mayGoOn: a period that ends the text so far, after this text, may yet
// be part of a number, an abbreviation, an initial or an ellipsis.
func mayGoOn(text string) bool {
	w := wordBefore(text)
	return w == "" || isDigits(w) || utf8.RuneCountInString(w) == 1 || strings.HasSuffix(w, ".") || notAnEnd(text)
}

// notAnEnd: a period after this text, followed by a space, is not a
// sentence end: an abbreviation ("Dr.", "e.g."), an initial ("J. Smith")
// or a numbered item at the start of a segment ("1. Open the app").
func notAnEnd(text string) bool {
	w := wordBefore(text)
	switch {
	case w == "":
		return false
	case isAbbrev(w):
		return true
	case utf8.RuneCountInString(w) == 1 && unicode.IsUpper([]rune(w)[0]):
		return true // an initial
	case isDigits(w) && len(w) <= 2 && strings.TrimSpace(text[:len(text)-len(w)]) == "":
		return true // "1. " opening an item
	}
	return false
}

func isDigits(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return w != ""
}

// abbrevs are common abbreviations written with a period, lower case,
// without their final period.
var abbrevs = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "sr": true, "jr": true,
	"st": true, "mt": true, "ft": true, "vs": true, "etc": true, "e.g": true, "i.e": true,
	"approx": true, "inc": true, "ltd": true, "co": true, "corp": true,
	"dept": true, "est": true, "fig": true, "jan": true, "feb": true, "mar": true, "apr": true,
	"jun": true, "jul": true, "aug": true, "sep": true, "sept": true, "oct": true, "nov": true,
	"dec": true, "mon": true, "tue": true, "wed": true, "thu": true, "fri": true,
	"a.m": true, "p.m": true, "u.s": true, "u.k": true,
	"tel": true, "ave": true, "blvd": true, "rd": true,
}

func isAbbrev(w string) bool { return abbrevs[strings.ToLower(w)] }
