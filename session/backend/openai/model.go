package openai

import (
	"context"
	"errors"
	"fmt"

	oai "github.com/openai/openai-go/v3"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// DefaultMaxReplyBytes bounds one streamed reply.
const DefaultMaxReplyBytes = 32 << 10

// ModelConfig configures a Model.
type ModelConfig struct {
	Endpoint
	// Model is the model name the server knows, such as "llama3.2".
	Model string
	// SystemPrompt, if set, is sent first in every request.
	SystemPrompt string
	// MaxTokens bounds the reply's tokens (0: the server's default).
	MaxTokens int
	// MaxReplyBytes bounds the reply's text; a longer stream is cut and
	// ends with ErrMalformed (0: DefaultMaxReplyBytes).
	MaxReplyBytes int
}

// Model streams chat completions. It is safe for concurrent use.
type Model struct {
	*conn
	cfg ModelConfig
}

// NewModel returns a Model for cfg. It does not contact the server.
func NewModel(cfg ModelConfig) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: model name required")
	}
	if cfg.MaxReplyBytes <= 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
	}
	c, err := newConn(cfg.Endpoint, 0)
	if err != nil {
		return nil, err
	}
	return &Model{conn: c, cfg: cfg}, nil
}

// Params returns the request Reply sends for t: the system prompt, the
// history, then the turn's text.
func (m *Model) Params(t backend.Turn) oai.ChatCompletionNewParams {
	msgs := make([]oai.ChatCompletionMessageParamUnion, 0, len(t.History)+2)
	if m.cfg.SystemPrompt != "" {
		msgs = append(msgs, oai.SystemMessage(m.cfg.SystemPrompt))
	}
	for _, h := range t.History {
		switch h.Role {
		case backend.RoleUser:
			msgs = append(msgs, oai.UserMessage(h.Content))
		case backend.RoleAssistant:
			msgs = append(msgs, oai.AssistantMessage(h.Content))
		case backend.RoleSystem:
			msgs = append(msgs, oai.SystemMessage(h.Content))
		}
	}
	msgs = append(msgs, oai.UserMessage(t.Text))
	p := oai.ChatCompletionNewParams{Model: m.cfg.Model, Messages: msgs}
	if m.cfg.MaxTokens > 0 {
		// max_tokens rather than max_completion_tokens: llama.cpp, Ollama
		// and vLLM all accept it.
		p.MaxTokens = oai.Int(int64(m.cfg.MaxTokens))
	}
	return p
}

// Reply implements backend.Model. It returns after the response body is
// closed.
func (m *Model) Reply(ctx context.Context, t backend.Turn, emit func(string) error) error {
	rctx, dog, cancel := m.watch(ctx)
	defer cancel(nil)
	defer dog.stop()
	stream := m.client.Chat.Completions.NewStreaming(rctx, m.Params(t))
	// Close is idempotent; every path below closes before returning.
	defer stream.Close()
	sent, finished := 0, false
	for stream.Next() {
		dog.pause()
		chunk := stream.Current()
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.FinishReason != "" {
				finished = true
			}
			if ch.Delta.Content == "" {
				continue
			}
			sent += len(ch.Delta.Content)
			if sent > m.cfg.MaxReplyBytes {
				stream.Close()
				return &backend.Error{Kind: backend.KindMalformed, Backend: Name, Op: "reply",
					Err: fmt.Errorf("reply longer than %d bytes", m.cfg.MaxReplyBytes)}
			}
			if err := emit(ch.Delta.Content); err != nil {
				stream.Close()
				return backend.EmitError(Name, "reply", err)
			}
		}
		dog.resume()
	}
	err := stream.Err()
	stream.Close()
	if finished && ctx.Err() == nil && errors.Is(context.Cause(rctx), errStalled) {
		// The reply was complete; the server just never closed the stream.
		return nil
	}
	if err != nil {
		return m.classify(ctx, rctx, "reply", err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !finished && sent == 0 {
		// A clean end with no content and no finish_reason answered
		// nothing. One with content is a complete reply: several real
		// servers end with `data: [DONE]`, or just close the stream,
		// without ever sending a finish_reason.
		return &backend.Error{Kind: backend.KindMalformed, Backend: Name, Op: "reply",
			Err: errors.New("stream ended with no content and no finish_reason")}
	}
	return nil
}
