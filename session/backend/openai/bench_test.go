package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// BenchmarkReplySSE measures openai-go's SSE parsing plus this adapter, end
// to end over loopback: one op is one streamed reply of 500 chunks.
func BenchmarkReplySSE(b *testing.B) {
	const chunks = 500
	var body bytes.Buffer
	for range chunks - 1 {
		body.WriteString("data: " + chunk("word ", "") + "\n\n")
	}
	body.WriteString("data: " + chunk("end", "stop") + "\n\ndata: [DONE]\n\n")
	f := newFake(&testing.T{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body.Bytes())
	})
	defer func() { close(f.done); f.Close() }()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	m, err := NewModel(ModelConfig{Endpoint: Endpoint{BaseURL: f.URL + "/v1", HTTPClient: hc}, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		n := 0
		if err := m.Reply(context.Background(), backend.Turn{Text: "hi"}, func(string) error { n++; return nil }); err != nil || n != chunks {
			b.Fatalf("%v after %d chunks", err, n)
		}
	}
	b.ReportMetric(float64(b.N*chunks)/time.Since(start).Seconds(), "chunks/s")
}

// BenchmarkSpeechPCM measures streaming 10 s of 24 kHz PCM into Audio chunks.
func BenchmarkSpeechPCM(b *testing.B) {
	audio := pcm(0, 10*SpeechRate)
	f := newFake(&testing.T{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/pcm")
		w.Write(audio)
	})
	defer func() { close(f.done); f.Close() }()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	s, err := NewSynthesizer(SpeechConfig{Endpoint: Endpoint{BaseURL: f.URL + "/v1", HTTPClient: hc}, Model: "tts-1", Voice: "alloy"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(audio)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Synthesize(context.Background(), strings.Repeat("x", 10), func(backend.Audio) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func sseBody(n int) []byte {
	var body bytes.Buffer
	for range n {
		body.WriteString("data: " + chunk("word ", "") + "\n\n")
	}
	return body.Bytes()
}

// BenchmarkParseSSE compares openai-go's chunk decoding (what Reply uses)
// with a minimal scanner and encoding/json into a three-field struct, to
// show what the library costs per chunk. One op is 500 chunks.
func BenchmarkParseSSE(b *testing.B) {
	b.Run("openai-go", benchParseOpenAIGo)
	b.Run("minimal", benchParseMinimal)
}

func benchParseOpenAIGo(b *testing.B) {
	body := sseBody(500)
	b.ReportAllocs()
	for b.Loop() {
		resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
		s := ssestream.NewStream[oai.ChatCompletionChunk](ssestream.NewDecoder(resp), nil)
		n := 0
		for s.Next() {
			n += len(s.Current().Choices[0].Delta.Content)
		}
	}
}

func benchParseMinimal(b *testing.B) {
	body := sseBody(500)
	b.ReportAllocs()
	type c struct {
		Choices []struct {
			Index        int
			Delta        struct{ Content string }
			FinishReason *string `json:"finish_reason"`
		}
	}
	for b.Loop() {
		sc := bufio.NewScanner(bytes.NewReader(body))
		n := 0
		for sc.Scan() {
			l := sc.Bytes()
			if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
				var x c
				if err := json.Unmarshal(d, &x); err != nil {
					b.Fatal(err)
				}
				n += len(x.Choices[0].Delta.Content)
			}
		}
	}
}
