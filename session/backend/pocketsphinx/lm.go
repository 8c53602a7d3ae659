package pocketsphinx

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// discount is the absolute discount taken from every seen bigram and given
// to the unseen ones through the history's back-off weight.
const discount = 0.5

// Words splits a sentence into the lower-case words a language model and a
// pronouncing dictionary hold: letters and apostrophes; anything else
// separates words.
func Words(sentence string) []string {
	return strings.FieldsFunc(strings.ToLower(sentence), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r == '\'')
	})
}

// corpusLines returns the sentences of a corpus text: one a line, blank
// lines and lines starting with # left out.
func corpusLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// writeARPA writes a bigram language model of sentences, in the ARPA text
// format pocketsphinx reads, keeping only words known (in the dictionary).
// Unigrams are add-one smoothed; bigrams absolutely discounted, backing
// off to the unigrams.
func writeARPA(w io.Writer, sentences []string, known func(string) bool) error {
	uni := map[string]int{}
	bi := map[[2]string]int{}
	hist := map[string]int{} // count of each word as a history
	for _, s := range sentences {
		words := []string{"<s>"}
		for _, w := range Words(s) {
			if known(w) {
				words = append(words, w)
			}
		}
		if len(words) == 1 {
			continue
		}
		words = append(words, "</s>")
		for i, w := range words {
			uni[w]++
			if i > 0 {
				bi[[2]string{words[i-1], w}]++
				hist[words[i-1]]++
			}
		}
	}
	if len(uni) == 0 {
		return fmt.Errorf("no known words in %d sentences", len(sentences))
	}
	vocab := make([]string, 0, len(uni))
	total := 0
	for w, c := range uni {
		vocab = append(vocab, w)
		if w != "<s>" {
			total += c
		}
	}
	sort.Strings(vocab)
	puni := map[string]float64{}
	for _, w := range vocab {
		if w != "<s>" {
			puni[w] = float64(uni[w]+1) / float64(total+len(vocab)-1)
		}
	}
	// Followers of each history, for the back-off weights.
	follow := map[string][]string{}
	for k := range bi {
		follow[k[0]] = append(follow[k[0]], k[1])
	}
	bow := map[string]float64{}
	for h, ws := range follow {
		seen := 0.0
		for _, w := range ws {
			seen += puni[w]
		}
		left := discount * float64(len(ws)) / float64(hist[h])
		if seen < 1 {
			bow[h] = left / (1 - seen)
		} else {
			bow[h] = 1
		}
	}
	keys := make([][2]string, 0, len(bi))
	for k := range bi {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\\data\\\nngram 1=%d\nngram 2=%d\n\n\\1-grams:\n", len(vocab), len(keys))
	for _, w := range vocab {
		p := -99.0
		if w != "<s>" {
			p = math.Log10(puni[w])
		}
		if b, ok := bow[w]; ok {
			fmt.Fprintf(bw, "%.4f %s %.4f\n", p, w, math.Log10(b))
		} else {
			fmt.Fprintf(bw, "%.4f %s\n", p, w)
		}
	}
	fmt.Fprintf(bw, "\n\\2-grams:\n")
	for _, k := range keys {
		p := (float64(bi[k]) - discount) / float64(hist[k[0]])
		fmt.Fprintf(bw, "%.4f %s %s\n", math.Log10(p), k[0], k[1])
	}
	fmt.Fprintf(bw, "\n\\end\\\n")
	return bw.Flush()
}

// loadDict reads a CMU pronouncing dictionary ("word PH ON ES", alternates
// as "word(2) ..."), keeping the entries of the words in want.
func loadDict(path string, want map[string]bool) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		word, _, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(word, '('); i > 0 {
			word = word[:i]
		}
		if want[word] {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
