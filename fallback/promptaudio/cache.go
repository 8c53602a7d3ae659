// Package promptaudio renders the prompt table's sentences to speech once,
// outside the synthesis stage, and serves them from a cache, so that a
// prompt is heard even while synthesis is the overloaded stage.
package promptaudio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
)

// Audio is rendered prompt speech: PCM16 samples at Rate a second.
type Audio struct {
	Rate    int
	Samples []int16
}

// Synthesizer renders text to speech, calling emit with consecutive chunks
// of audio at its native rate; emit may not keep a chunk's Samples after it
// returns. It is the session's synthesizer as seen from below: the
// composition root adapts it (session/offer.Synthesizer), so that the
// fallback knows nothing of the call engine above it.
type Synthesizer interface {
	Synthesize(ctx context.Context, text string, emit func(Audio) error) error
}

// Errors of Get.
var (
	// ErrNoSynthesizer: the Cache was built without a synthesizer.
	ErrNoSynthesizer = errors.New("fallback: no synthesizer for prompt audio")
	// ErrClosed: the Cache was closed.
	ErrClosed = errors.New("fallback: prompt audio closed")
)

// MaxText bounds the text Get will render.
const MaxText = 1000

// CacheSize is the number of rendered prompts a Cache keeps.
const CacheSize = 512

// Cache renders prompts and keeps them. It is safe for concurrent use;
// Close it to end its renderings.
type Cache struct {
	synth Synthesizer
	log   *slog.Logger
	audio *lru.Cache[string, Audio]

	ctx    context.Context // ends at Close; owns the renderings
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	rendering map[string]*flight
	closed    bool
}

// New returns a Cache that renders with synth (nil: Get reports
// ErrNoSynthesizer) and starts rendering every fixed prompt (prompt.All)
// in the background, one at a time so that start-up does not compete with
// callers for the synthesizer. log may be nil.
func New(synth Synthesizer, log *slog.Logger) *Cache {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	audio, err := lru.New[string, Audio](CacheSize)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	c := &Cache{synth: synth, log: log, audio: audio, rendering: map[string]*flight{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if synth != nil {
		c.wg.Go(func() { c.warm(c.ctx) })
	}
	return c
}

// Close ends the renderings and waits for them.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// Get returns the speech for a prompt's text. Every fixed prompt is
// rendered once in the background at start-up; any other text is rendered
// on first use. Rendering calls the synthesizer directly, outside the
// synthesis stage's controller, so a prompt is heard even while synthesis
// is the overloaded stage; concurrent requests for one text share one
// rendering. The cache keeps CacheSize texts.
func (c *Cache) Get(ctx context.Context, text string) (Audio, error) {
	if a, ok := c.audio.Get(text); ok {
		return a, nil
	}
	if c.synth == nil {
		return Audio{}, ErrNoSynthesizer
	}
	if len(text) > MaxText {
		return Audio{}, fmt.Errorf("fallback: prompt text of %d bytes, at most %d", len(text), MaxText)
	}
	f, err := c.flight(text)
	if err != nil {
		return Audio{}, err
	}
	select {
	case <-f.done:
		return f.audio, f.err
	case <-ctx.Done():
		return Audio{}, ctx.Err()
	}
}

// Ready reports whether every fixed prompt has been rendered.
func (c *Cache) Ready() bool {
	for _, p := range prompt.All() {
		if !c.audio.Contains(p.Text) {
			return false
		}
	}
	return true
}

// flight is one rendering that concurrent callers share.
type flight struct {
	done  chan struct{}
	audio Audio
	err   error
}

// flight joins the rendering of text, starting it if none runs. Rendering
// belongs to the cache, not to the first caller: a caller who hangs up
// must not fail the others waiting. Close waits for it.
func (c *Cache) flight(text string) (*flight, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if f := c.rendering[text]; f != nil {
		return f, nil
	}
	f := &flight{done: make(chan struct{})}
	c.rendering[text] = f
	c.wg.Go(func() {
		f.audio, f.err = c.render(c.ctx, text)
		c.mu.Lock()
		delete(c.rendering, text)
		c.mu.Unlock()
		close(f.done)
	})
	return f, nil
}

func (c *Cache) render(ctx context.Context, text string) (Audio, error) {
	if a, ok := c.audio.Get(text); ok {
		return a, nil
	}
	var out Audio
	err := c.synth.Synthesize(ctx, text, func(a Audio) error {
		if out.Rate == 0 {
			out.Rate = a.Rate
		}
		if a.Rate != out.Rate {
			return fmt.Errorf("fallback: prompt audio changed rate from %d to %d", out.Rate, a.Rate)
		}
		out.Samples = append(out.Samples, a.Samples...)
		return nil
	})
	if err != nil {
		return Audio{}, fmt.Errorf("fallback: render prompt: %w", err)
	}
	c.audio.Add(text, out)
	return out, nil
}

// warm renders every fixed prompt, one at a time.
func (c *Cache) warm(ctx context.Context) {
	for _, p := range prompt.All() {
		if ctx.Err() != nil {
			return
		}
		if _, err := c.Get(ctx, p.Text); err != nil && ctx.Err() == nil {
			c.log.Warn("prompt audio not rendered ahead; will retry on first use", "stage", p.Stage, "reason", p.Reason, "err", err)
		}
	}
}
