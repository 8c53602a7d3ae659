// Package agent is a rehearsal agent: an OpenAI-compatible chat
// completions server (POST /v1/chat/completions with "stream": true,
// GET /v1/models) that streams a reply of a set number of words at a set
// pace, so that frontdoor can be measured against a model stream with real
// timing (frontdoor agent, and the load benchmarks) without a model.
package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Config shapes the replies. Zero values take the defaults noted.
type Config struct {
	// Words in each reply (0: 25).
	Words int
	// TokensPerSecond paces the words after the first, one word a token
	// (0: 10).
	TokensPerSecond float64
	// FirstToken is the time from the request to the first word (0: 100ms;
	// negative: none).
	FirstToken time.Duration
	// SentenceWords ends a sentence every that many words (0: 12).
	SentenceWords int
	// NoFinishReason leaves finish_reason out of every chunk and ends the
	// stream with [DONE] alone, as several real servers do.
	NoFinishReason bool
}

func (c Config) withDefaults() Config {
	if c.Words <= 0 {
		c.Words = 25
	}
	if c.TokensPerSecond <= 0 {
		c.TokensPerSecond = 10
	}
	if c.FirstToken == 0 {
		c.FirstToken = 100 * time.Millisecond
	}
	if c.SentenceWords <= 0 {
		c.SentenceWords = 12
	}
	return c
}

// vocabulary is what the agent says, in order, again and again.
var vocabulary = strings.Fields("thanks for calling we are open from nine in the morning until six in the evening on weekdays and I can book a table or a callback for you whenever you like")

// Reply is the reply's deltas: Words words, a sentence ended every
// SentenceWords words and at the end, each word but the first with its
// leading space.
func (c Config) Reply() []string {
	c = c.withDefaults()
	out := make([]string, c.Words)
	for i := range out {
		w := vocabulary[i%len(vocabulary)]
		if i%c.SentenceWords == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if (i+1)%c.SentenceWords == 0 || i == c.Words-1 {
			w += "."
		}
		if i > 0 {
			w = " " + w
		}
		out[i] = w
	}
	return out
}

// Handler serves the agent. Each reply is paced on the wall clock and
// stops when the client goes away.
func Handler(c Config) http.Handler {
	c = c.withDefaults()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"rehearsal","object":"model","owned_by":"frontdoor"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || !req.Stream {
			http.Error(w, `{"error":{"message":"a streaming chat completion request is required"}}`, http.StatusBadRequest)
			return
		}
		stream(w, r, c)
	})
	return mux
}

func stream(w http.ResponseWriter, r *http.Request, c Config) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	start := time.Now()
	gap := time.Duration(float64(time.Second) / c.TokensPerSecond)
	words := c.Reply()
	for i, d := range words {
		at := start.Add(max(c.FirstToken, 0) + time.Duration(i)*gap)
		t := time.NewTimer(time.Until(at))
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
		finish := "null"
		if i == len(words)-1 && !c.NoFinishReason {
			finish = `"stop"`
		}
		content, _ := json.Marshal(d)
		fmt.Fprintf(w, "data: {\"id\":\"rehearsal\",\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":\"rehearsal\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":%s}]}\n\n",
			start.Unix(), content, finish)
		fl.Flush()
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	fl.Flush()
}
