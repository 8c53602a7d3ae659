package espeak

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// Rate is espeak-ng's native sample rate.
const Rate = 22050

// DefaultMaxText bounds the text of one Synthesize call (above the openai
// model's longest reply, so a whole reply can be spoken in one call).
const DefaultMaxText = 64 << 10

// Options configure a Synthesizer. The zero value uses espeak-ng's defaults.
type Options struct {
	// Path is the espeak-ng executable (default "espeak-ng", found in PATH).
	Path string
	// Voice is an espeak-ng voice name such as "en-us" or "en+f3".
	Voice string
	// Speed is the speaking rate in words per minute (80 to 450; 0: default).
	Speed int
	// MaxText bounds the text of one call in bytes (0: DefaultMaxText).
	MaxText int
	// ChunkBytes is the largest chunk read and emitted at once (0: 4096,
	// about 93 ms of audio).
	ChunkBytes int
}

// Synthesizer runs espeak-ng for each call. It is safe for concurrent use.
type Synthesizer struct {
	path string
	args []string
	opt  Options
	// started, if set, is told each process's pid (for tests).
	started func(pid int)
}

// Available reports whether espeak-ng is installed in PATH.
func Available() bool {
	_, err := exec.LookPath("espeak-ng")
	return err == nil
}

// Probe implements backend.Prober: espeak-ng is there and runs
// (--version), within ctx.
func (s *Synthesizer) Probe(ctx context.Context) error {
	if err := exec.CommandContext(ctx, s.path, "--version").Run(); err != nil {
		return fmt.Errorf("%s --version: %w", s.path, err)
	}
	return nil
}

var voiceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_+./-]{0,63}$`)

// New returns a Synthesizer with options o. It checks the options, not that
// espeak-ng is installed (see Available): a missing executable makes each
// call fail with backend.ErrUnavailable.
func New(o Options) (*Synthesizer, error) {
	if o.Path == "" {
		o.Path = "espeak-ng"
	}
	if o.MaxText <= 0 {
		o.MaxText = DefaultMaxText
	}
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = 4096
	}
	o.ChunkBytes += o.ChunkBytes % 2
	args := []string{"--stdout"}
	if o.Voice != "" {
		if !voiceRE.MatchString(o.Voice) || strings.Contains(o.Voice, "..") {
			return nil, fmt.Errorf("espeak: invalid voice %q", o.Voice)
		}
		args = append(args, "-v", o.Voice)
	}
	if o.Speed != 0 {
		if o.Speed < 80 || o.Speed > 450 {
			return nil, fmt.Errorf("espeak: speed %d outside 80..450 words per minute", o.Speed)
		}
		args = append(args, "-s", strconv.Itoa(o.Speed))
	}
	return &Synthesizer{path: o.Path, args: args, opt: o}, nil
}

// Synthesize implements backend.Synthesizer. The text is given to espeak-ng
// on standard input, with control characters replaced by spaces.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, emit func(backend.Audio) error) error {
	if len(text) > s.opt.MaxText {
		return &backend.Error{Kind: backend.KindRejected, Backend: "espeak", Op: "synthesize",
			Err: fmt.Errorf("text of %d bytes exceeds %d", len(text), s.opt.MaxText)}
	}
	text = sanitize(text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	pctx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(pctx, s.path, s.args...)
	cmd.Stdin = strings.NewReader(text)
	stderr := &limitedBuffer{max: 1024}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole process group, so no helper keeps the pipe open.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// If something still holds the pipes after the kill, stop waiting for
	// them rather than hang (on the wall clock: os/exec waits for a real
	// process's pipes).
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return &backend.Error{Kind: backend.KindOther, Backend: "espeak", Op: "synthesize", Err: err}
	}
	if err := cmd.Start(); err != nil {
		return &backend.Error{Kind: backend.KindUnavailable, Backend: "espeak", Op: "synthesize", Err: err}
	}
	if s.started != nil {
		s.started(cmd.Process.Pid)
	}
	streamErr := s.stream(pctx, stdout, emit)
	if streamErr != nil {
		kill() // stop producing audio nobody will read
	}
	// The process is gone (and reaped) once Wait returns.
	waitErr := cmd.Wait()
	return s.result(ctx, streamErr, waitErr, stderr)
}

func (s *Synthesizer) result(ctx context.Context, streamErr, waitErr error, stderr *limitedBuffer) error {
	var emitErr *emitFailure
	var exitErr *exec.ExitError
	// An exit status of its own (not our kill) means espeak-ng failed.
	failed := errors.As(waitErr, &exitErr) && exitErr.Exited()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(streamErr, &emitErr):
		return backend.EmitError("espeak", "synthesize", emitErr.err)
	case failed || (waitErr != nil && streamErr == nil):
		return &backend.Error{Kind: backend.KindUnavailable, Backend: "espeak", Op: "synthesize",
			Err: fmt.Errorf("%w: %s", waitErr, strings.TrimSpace(stderr.String()))}
	case streamErr != nil:
		return &backend.Error{Kind: backend.KindMalformed, Backend: "espeak", Op: "synthesize", Err: streamErr}
	}
	return nil
}

type emitFailure struct{ err error }

func (e *emitFailure) Error() string { return e.err.Error() }

// stream parses the WAV header, then emits the samples as they arrive.
func (s *Synthesizer) stream(ctx context.Context, r io.Reader, emit func(backend.Audio) error) error {
	rate, err := readWAVHeader(r)
	if err != nil {
		return err
	}
	buf := make([]byte, s.opt.ChunkBytes)
	have := 0 // bytes in buf not yet emitted (0 or 1: an odd byte)
	for {
		n, err := r.Read(buf[have:])
		have += n
		if ctx.Err() != nil {
			return ctx.Err() // audio still in the pipe is not for anyone
		}
		if whole := have &^ 1; whole > 0 {
			samples := make([]int16, whole/2)
			for i := range samples {
				samples[i] = int16(binary.LittleEndian.Uint16(buf[2*i:]))
			}
			if eerr := emit(backend.Audio{Rate: rate, Samples: samples}); eerr != nil {
				return &emitFailure{eerr}
			}
			copy(buf, buf[whole:have])
			have -= whole
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// sanitize replaces control characters other than newline and tab.
func sanitize(text string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return ' '
		}
		return r
	}, text)
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
