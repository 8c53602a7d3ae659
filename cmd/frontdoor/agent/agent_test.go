package agent_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/agent"
	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAgentSpeaksOpenAI: frontdoor's own OpenAI-compatible adapter reads
// the agent's stream as a complete reply, with and without
// finish_reason, word by word.
func TestAgentSpeaksOpenAI(t *testing.T) {
	for _, noFinish := range []bool{false, true} {
		cfg := agent.Config{Words: 7, TokensPerSecond: 1000, FirstToken: time.Millisecond, SentenceWords: 4, NoFinishReason: noFinish}
		srv := httptest.NewServer(agent.Handler(cfg))
		m, err := openai.NewModel(openai.ModelConfig{Endpoint: openai.Endpoint{BaseURL: srv.URL + "/v1"}, Model: "rehearsal"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		err = m.Reply(context.Background(), backend.Turn{Text: "hi"}, func(d string) error { got = append(got, d); return nil })
		srv.CloseClientConnections()
		srv.Close()
		if err != nil {
			t.Fatalf("no finish_reason %v: %v", noFinish, err)
		}
		want := "Thanks for calling we. Are open from."
		if strings.Join(got, "") != want || len(got) != 7 {
			t.Fatalf("reply %q, want %q in 7 deltas", got, want)
		}
	}
}

func TestReply(t *testing.T) {
	got := strings.Join(agent.Config{Words: 25}.Reply(), "")
	if n := strings.Count(got, "."); n != 3 || len(strings.Fields(got)) != 25 {
		t.Fatalf("%q: want 25 words in 3 sentences", got)
	}
}
