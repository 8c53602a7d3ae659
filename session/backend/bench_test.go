package backend

import (
	"strings"
	"testing"
)

// BenchmarkHistoryAdd measures adding a turn pair to a full history.
func BenchmarkHistoryAdd(b *testing.B) {
	h := NewHistory(0, 0)
	text := strings.Repeat("word ", 40)
	b.ReportAllocs()
	for b.Loop() {
		h.Add(Message{RoleUser, text})
		h.Add(Message{RoleAssistant, text})
	}
}
