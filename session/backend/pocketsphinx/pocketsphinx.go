package pocketsphinx

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Rate is the sample rate the en-us acoustic model was trained on; speech
// at any other rate is resampled to it.
const Rate = 16000

// DefaultModelDir is where Debian's pocketsphinx-en-us installs the model.
const DefaultModelDir = "/usr/share/pocketsphinx/model/en-us"

// DefaultMaxAudio bounds the speech of one Recognize call.
const DefaultMaxAudio = 2 * time.Minute

// Language models (Options.LM).
const (
	// LMDomain is a bigram model learned from the built-in corpus (what a
	// front desk's callers and prompts say) and Options.Corpus: accurate
	// inside that vocabulary, unable to hear words outside it.
	LMDomain = "domain"
	// LMGeneral is the en-us package's general model with its whole
	// dictionary: any English, much less accurately.
	LMGeneral = "general"
)

// pad is the silence put around the speech so the decoder's voice
// activity detection sees its start and its end.
const pad = 300 * time.Millisecond

//go:embed corpus.txt
var builtinCorpus string

// Corpus returns the built-in corpus's sentences.
func Corpus() []string { return corpusLines(builtinCorpus) }

// Options configure a Recognizer. The zero value uses the domain model of
// Debian's packages.
type Options struct {
	// Path is the pocketsphinx_continuous executable (default: found in
	// PATH).
	Path string
	// ModelDir holds the acoustic model (en-us/), the dictionary
	// (cmudict-en-us.dict) and the general language model (en-us.lm.bin)
	// (default DefaultModelDir).
	ModelDir string
	// LM is LMDomain (also when empty), LMGeneral, or the path of a
	// language model file (ARPA or binary) used with the whole dictionary.
	LM string
	// Corpus is more sentences for the domain model.
	Corpus []string
	// Phrases, when set, make a grammar recognizer (grammar.go): it hears
	// only these phrases and Filler sentences, in any run; LM and Corpus
	// are not used. Each phrase is a JSGF alternative of words: "[yes]
	// (call me back | a person) [please]". For the answers to an offer.
	Phrases []string
	// Filler are the sentences a grammar recognizer decodes speech
	// outside Phrases as (nil: a built-in list of what front desk callers
	// say; empty: none, so that any speech comes out as some phrase).
	Filler []string
	// MaxAudio bounds the speech of one call; longer is rejected
	// (0: DefaultMaxAudio).
	MaxAudio time.Duration
}

// Recognizer runs pocketsphinx_continuous for each utterance. It is safe
// for concurrent use; Close removes the domain model's files.
type Recognizer struct {
	path string
	args []string
	dir  string // temporary directory of the domain model, or ""
	mdef string // the acoustic model's definition, for Probe
	max  time.Duration
	// started, if set, is told each process's pid (for tests).
	started func(pid int)
}

// Available reports whether pocketsphinx_continuous is in PATH and the
// en-us model is installed in DefaultModelDir.
func Available() bool {
	if _, err := exec.LookPath("pocketsphinx_continuous"); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(DefaultModelDir, "en-us", "mdef"))
	return err == nil
}

// Probe implements backend.Prober: pocketsphinx_continuous is there and
// runs, within ctx (it has no --version: started without arguments it
// exits at once, with a usage error, which counts as running), and the
// acoustic model is installed.
func (r *Recognizer) Probe(ctx context.Context) error {
	err := exec.CommandContext(ctx, r.path).Run()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || ctx.Err() != nil) {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	if _, err := os.Stat(r.mdef); err != nil {
		return fmt.Errorf("acoustic model: %w", err)
	}
	return nil
}

// New returns a Recognizer with options o. For the domain model it writes
// the language model and the dictionary of its words to a temporary
// directory (removed by Close).
func New(o Options) (*Recognizer, error) {
	if o.Path == "" {
		o.Path = "pocketsphinx_continuous"
	}
	if o.ModelDir == "" {
		o.ModelDir = DefaultModelDir
	}
	if o.MaxAudio <= 0 {
		o.MaxAudio = DefaultMaxAudio
	}
	dict := filepath.Join(o.ModelDir, "cmudict-en-us.dict")
	r := &Recognizer{path: o.Path, max: o.MaxAudio, mdef: filepath.Join(o.ModelDir, "en-us", "mdef")}
	lm := o.LM
	search := "-lm"
	switch {
	case len(o.Phrases) > 0:
		dir, err := os.MkdirTemp("", "frontdoor-pocketsphinx-")
		if err != nil {
			return nil, fmt.Errorf("pocketsphinx: %w", err)
		}
		r.dir = dir
		filler := o.Filler
		if filler == nil {
			filler = defaultFiller
		}
		search = "-jsgf"
		if lm, dict, err = writeGrammar(dir, dict, o.Phrases, filler); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pocketsphinx: grammar: %w", err)
		}
	case lm == "" || lm == LMDomain:
		dir, err := os.MkdirTemp("", "frontdoor-pocketsphinx-")
		if err != nil {
			return nil, fmt.Errorf("pocketsphinx: %w", err)
		}
		r.dir = dir
		if lm, dict, err = writeDomain(dir, dict, append(Corpus(), o.Corpus...)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pocketsphinx: domain model: %w", err)
		}
	case lm == LMGeneral:
		lm = filepath.Join(o.ModelDir, "en-us.lm.bin")
	}
	r.args = []string{
		"-hmm", filepath.Join(o.ModelDir, "en-us"),
		search, lm,
		"-dict", dict,
		"-samprate", "16000",
		// Spectral noise removal smears the ends of clean (synthetic or
		// close-microphone) speech into the following silence.
		"-remove_noise", "no",
		"-logfn", "/dev/null",
		// Raw PCM16 on standard input: no file is written per call.
		"-infile", "/dev/stdin",
	}
	return r, nil
}

// writeDomain writes the language model of sentences and the dictionary of
// its words into dir, returning their paths.
func writeDomain(dir, dict string, sentences []string) (lmPath, dictPath string, err error) {
	want := map[string]bool{}
	for _, s := range sentences {
		for _, w := range Words(s) {
			want[w] = true
		}
	}
	entries, err := loadDict(dict, want)
	if err != nil {
		return "", "", err
	}
	known := map[string]bool{}
	for _, e := range entries {
		w, _, _ := strings.Cut(e, " ")
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i]
		}
		known[w] = true
	}
	var lm bytes.Buffer
	if err := writeARPA(&lm, sentences, func(w string) bool { return known[w] }); err != nil {
		return "", "", err
	}
	lmPath = filepath.Join(dir, "domain.lm")
	dictPath = filepath.Join(dir, "domain.dict")
	if err := os.WriteFile(lmPath, lm.Bytes(), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(dictPath, []byte(strings.Join(entries, "\n")+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return lmPath, dictPath, nil
}

// Close removes the domain model's files. Calls still running keep the
// files they opened.
func (r *Recognizer) Close() error {
	if r.dir == "" {
		return nil
	}
	return os.RemoveAll(r.dir)
}

// Recognize implements backend.Recognizer. Cancelling ctx kills the
// decoder's process group; Recognize returns only once it has been waited
// for.
func (r *Recognizer) Recognize(ctx context.Context, a backend.Audio) (string, error) {
	if len(a.Samples) == 0 || a.Rate <= 0 {
		return "", nil
	}
	if d := a.Duration(); d > r.max {
		return "", &backend.Error{Kind: backend.KindRejected, Backend: "pocketsphinx", Op: "recognize",
			Err: fmt.Errorf("%v of speech exceeds %v", d, r.max)}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	in, err := input(a)
	if err != nil {
		return "", &backend.Error{Kind: backend.KindRejected, Backend: "pocketsphinx", Op: "recognize", Err: err}
	}
	cmd := exec.CommandContext(ctx, r.path, r.args...)
	cmd.Stdin = bytes.NewReader(in)
	var out bytes.Buffer
	stderr := &limitedBuffer{max: 1024}
	cmd.Stdout = &out
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole process group: nothing of the decoder outlives the
	// call, so the recognize lease ends when its work has.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// On the wall clock: os/exec waits for a real process's pipes.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return "", &backend.Error{Kind: backend.KindUnavailable, Backend: "pocketsphinx", Op: "recognize", Err: err}
	}
	if r.started != nil {
		r.started(cmd.Process.Pid)
	}
	// The process is gone (and reaped) once Wait returns.
	err = cmd.Wait()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return "", &backend.Error{Kind: backend.KindUnavailable, Backend: "pocketsphinx", Op: "recognize",
			Err: fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))}
	}
	// One line per utterance the decoder's VAD found.
	return strings.Join(strings.Fields(out.String()), " "), nil
}

// input is a's speech at Rate as raw little-endian PCM16, with silence
// around it.
func input(a backend.Audio) ([]byte, error) {
	s := a.Samples
	if a.Rate != Rate {
		var err error
		if s, err = pcm.Resample(s, a.Rate, Rate); err != nil {
			return nil, fmt.Errorf("resample %d Hz: %w", a.Rate, err)
		}
	}
	n := int(pad * Rate / time.Second)
	buf := make([]int16, 0, len(s)+2*n)
	buf = append(buf, make([]int16, n)...)
	buf = append(buf, s...)
	attenuate(buf[n:])
	buf = append(buf, make([]int16, n)...)
	if a.Rate < Rate {
		fillHighBand(buf)
	}
	return pcm.Encode(nil, buf), nil
}

// maxPeak is the loudest sample given to the decoder: full-scale speech
// (as espeak-ng makes) is decoded worse than the levels of its training
// data.
const maxPeak = 10000

// attenuate scales s down in place so its peak is at most maxPeak; quieter
// speech is left as it is.
func attenuate(s []int16) {
	peak := 0
	for _, v := range s {
		peak = max(peak, int(v), -int(v))
	}
	if peak <= maxPeak {
		return
	}
	for i, v := range s {
		s[i] = int16(int(v) * maxPeak / peak)
	}
}

// highBandNoise is the amplitude of the noise fillHighBand adds.
const highBandNoise = 100

// fillHighBand adds faint high-pass noise to s. Telephone speech (8 kHz)
// resampled to 16 kHz has nothing above 4 kHz, and the wideband acoustic
// model, trained on recordings that always have some energy there, decodes
// such silence as speech sounds; a noise floor there restores most of its
// accuracy. The generator is seeded, so a recognition is reproducible.
func fillHighBand(s []int16) {
	rng := rand.New(rand.NewPCG(1, 2))
	prev := 0
	for i, v := range s {
		n := rng.IntN(2*highBandNoise+1) - highBandNoise
		s[i] = pcm.Clamp16(float64(int(v) + n - prev))
		prev = n
	}
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
