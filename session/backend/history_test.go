package backend

import (
	"strings"
	"testing"
)

func TestHistoryBounds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		msgs, max int
		add       []Message
		want      []Message
	}{
		{"keeps within bounds", 4, 100,
			[]Message{{RoleUser, "a"}, {RoleAssistant, "b"}},
			[]Message{{RoleUser, "a"}, {RoleAssistant, "b"}}},
		{"drops oldest by count", 2, 100,
			[]Message{{RoleUser, "a"}, {RoleAssistant, "b"}, {RoleUser, "c"}, {RoleAssistant, "d"}},
			[]Message{{RoleUser, "c"}, {RoleAssistant, "d"}}},
		{"drops an orphaned reply", 2, 100,
			[]Message{{RoleUser, "a"}, {RoleAssistant, "b"}, {RoleUser, "c"}},
			[]Message{{RoleUser, "c"}}},
		{"drops oldest by bytes", 10, 6,
			[]Message{{RoleUser, "aaa"}, {RoleAssistant, "bbb"}, {RoleUser, "ccc"}},
			[]Message{{RoleUser, "ccc"}}},
		{"cuts a long message to its tail", 10, 4,
			[]Message{{RoleUser, "abcdefgh"}},
			[]Message{{RoleUser, "efgh"}}},
		{"ignores empty messages", 10, 10,
			[]Message{{RoleUser, ""}, {RoleUser, "x"}},
			[]Message{{RoleUser, "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory(tc.msgs, tc.max)
			for _, m := range tc.add {
				h.Add(m)
			}
			got := h.Messages()
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			total := 0
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
				total += len(got[i].Content)
			}
			if h.Bytes() != total || h.Len() != len(got) {
				t.Fatalf("Bytes %d Len %d, want %d %d", h.Bytes(), h.Len(), total, len(got))
			}
		})
	}
}

func TestHistoryReplaceLastAssistant(t *testing.T) {
	h := NewHistory(0, 0)
	if h.ReplaceLastAssistant("x") {
		t.Fatal("replaced in an empty history")
	}
	h.Add(Message{RoleUser, "tell me a story"})
	h.Add(Message{RoleAssistant, "Once upon a time there was a dragon."})
	if !h.ReplaceLastAssistant("Once upon a time") {
		t.Fatal("no assistant reply replaced")
	}
	if got := h.Messages()[1].Content; got != "Once upon a time" || h.Bytes() != len("tell me a story")+len(got) {
		t.Fatalf("reply %q bytes %d", got, h.Bytes())
	}
	if !h.ReplaceLastAssistant("") || h.Len() != 1 || h.Bytes() != len("tell me a story") {
		t.Fatalf("empty heard kept %v", h.Messages())
	}
	if h.ReplaceLastAssistant("x") {
		t.Fatal("replaced a user message")
	}
}

func TestTailRuneBoundary(t *testing.T) {
	s := strings.Repeat("é", 4) // 8 bytes
	if got := tail(s, 3); got != "é" {
		t.Fatalf("tail %q", got)
	}
}

func FuzzHistory(f *testing.F) {
	f.Add("hello", "héllo wörld", uint8(3), uint8(10))
	f.Fuzz(func(t *testing.T, a, b string, n, max uint8) {
		h := NewHistory(int(n%8)+1, int(max)+1)
		h.Add(Message{RoleUser, a})
		h.Add(Message{RoleAssistant, b})
		h.ReplaceLastAssistant(a)
		total := 0
		for _, m := range h.Messages() {
			total += len(m.Content)
		}
		if total != h.Bytes() || total > int(max)+1 || h.Len() > int(n%8)+1 {
			t.Fatalf("bounds broken: %d bytes, %d msgs", total, h.Len())
		}
	})
}
