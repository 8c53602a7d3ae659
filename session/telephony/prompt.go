package telephony

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// maxPrompt bounds the prompt audio a transport renders itself.
const maxPrompt = 30 * time.Second

// promptRender bounds one rendering of a prompt.
const promptRender = 3 * time.Second

// Bounds of a promptCache: prompts are a handful of fixed sentences, so
// the cache is only ever full when something else is wrong; it then starts
// over rather than grow.
const (
	maxPromptEntries = 64
	maxPromptBytes   = 16 << 20
)

// promptCache holds prompt audio, rendered once per text and
// shared by every caller: under overload the refused callers are many,
// and each hears the same sentence, which must not cost a synthesis per
// caller. The same rendering is encoded once per line format by the
// call's writer (session.Voice, whose encodings are keyed by the audio
// itself). Concurrent requests for one prompt share its rendering; a
// failed rendering is not kept, so the next caller tries again.
type promptCache struct {
	mu    sync.Mutex
	m     map[promptKey]*promptEntry
	bytes int
}

// PromptCache is the prompt audio that telephony endpoints share (see
// Config.Prompts). The zero value is not usable: use NewPromptCache.
type PromptCache struct{ c *promptCache }

// NewPromptCache returns an empty PromptCache.
func NewPromptCache() *PromptCache { return &PromptCache{c: newPromptCache()} }

func newPromptCache() *promptCache { return &promptCache{m: map[promptKey]*promptEntry{}} }

// promptKey is a prompt's text: the engine's synthesizer renders it (the
// keypad menu's lines are rendered, and cached, by its Fallback).
type promptKey string

type promptEntry struct {
	done  chan struct{}
	audio backend.Audio
	err   error
}

// get returns the prompt of key, rendering it with render if no caller
// did yet. The rendering runs on the first caller's goroutine, bounded by
// promptRender whatever its context; the others wait for it or for ctx.
func (p *promptCache) get(ctx context.Context, key promptKey, render func(context.Context) (backend.Audio, error)) (backend.Audio, error) {
	p.mu.Lock()
	e, ok := p.m[key]
	if !ok {
		if len(p.m) >= maxPromptEntries || p.bytes >= maxPromptBytes {
			clear(p.m)
			p.bytes = 0
		}
		e = &promptEntry{done: make(chan struct{})}
		p.m[key] = e
	}
	p.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			return e.audio, e.err
		case <-ctx.Done():
			return backend.Audio{}, ctx.Err()
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), promptRender)
	defer cancel()
	a, err := render(rctx)
	if err == nil {
		if n := a.Rate * int(maxPrompt/time.Second); len(a.Samples) > n {
			a.Samples = a.Samples[:n]
		}
		e.audio = a
	}
	e.err = err
	close(e.done)
	p.mu.Lock()
	if err != nil && p.m[key] == e {
		delete(p.m, key)
	} else if err == nil {
		p.bytes += 2 * len(e.audio.Samples)
	}
	p.mu.Unlock()
	return e.audio, err
}

// synthesized returns text rendered by synth, outside the synthesis stage
// (prompts are short and must be heard even when it is full).
func (p *promptCache) synthesized(ctx context.Context, synth backend.Synthesizer, text string) (backend.Audio, error) {
	return p.get(ctx, promptKey(text), func(ctx context.Context) (backend.Audio, error) {
		return synthesize(ctx, synth, text)
	})
}

// synthesize collects the speech of text, at most maxPrompt of it.
func synthesize(ctx context.Context, synth backend.Synthesizer, text string) (backend.Audio, error) {
	var out backend.Audio
	err := synth.Synthesize(ctx, text, func(a backend.Audio) error {
		if out.Rate == 0 {
			out.Rate = a.Rate
		}
		if a.Rate != out.Rate {
			return fmt.Errorf("telephony: prompt audio changed rate: %w", backend.ErrMalformed)
		}
		if len(out.Samples) < out.Rate*int(maxPrompt/time.Second) {
			out.Samples = append(out.Samples, a.Samples...)
		}
		return nil
	})
	return out, err
}

// cache returns p's cache, or a new one for a nil p.
func (p *PromptCache) cache() *promptCache {
	if p == nil {
		return newPromptCache()
	}
	return p.c
}
