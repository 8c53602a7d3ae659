package backend

import (
	"sync"
	"unicode/utf8"
)

// Default bounds of a History.
const (
	DefaultHistoryMessages = 32
	DefaultHistoryBytes    = 16 << 10
)

// History is one call's bounded conversation: at most a number of messages
// and a number of content bytes, the oldest dropped first. It keeps only what
// the caller heard: after a barge-in the session replaces the interrupted
// assistant reply with its heard part. It is safe for concurrent use.
type History struct {
	mu          sync.Mutex
	maxMessages int
	maxBytes    int
	msgs        []Message
	bytes       int
}

// NewHistory returns an empty history holding at most maxMessages messages
// and maxBytes bytes of content; a bound <= 0 takes its default.
func NewHistory(maxMessages, maxBytes int) *History {
	if maxMessages <= 0 {
		maxMessages = DefaultHistoryMessages
	}
	if maxBytes <= 0 {
		maxBytes = DefaultHistoryBytes
	}
	return &History{maxMessages: maxMessages, maxBytes: maxBytes}
}

// Add appends m, then drops the oldest messages until the bounds hold. A
// message longer than the byte bound keeps only its last maxBytes bytes (the
// latest words matter most). Empty messages are not kept.
func (h *History) Add(m Message) {
	if m.Content == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(m.Content) > h.maxBytes {
		m.Content = tail(m.Content, h.maxBytes)
	}
	h.msgs = append(h.msgs, m)
	h.bytes += len(m.Content)
	h.trim()
}

// ReplaceLastAssistant keeps only heard of the last message, if it is an
// assistant reply: the caller barged in and heard only that part. An empty
// heard removes the reply. It reports whether there was such a reply.
func (h *History) ReplaceLastAssistant(heard string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.msgs)
	if n == 0 || h.msgs[n-1].Role != RoleAssistant {
		return false
	}
	h.bytes -= len(h.msgs[n-1].Content)
	if heard == "" {
		h.msgs[n-1] = Message{}
		h.msgs = h.msgs[:n-1]
		return true
	}
	if len(heard) > h.maxBytes {
		heard = tail(heard, h.maxBytes)
	}
	h.msgs[n-1].Content = heard
	h.bytes += len(heard)
	h.trim()
	return true
}

// Messages returns a copy of the history, oldest first.
func (h *History) Messages() []Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Message(nil), h.msgs...)
}

// Len returns the number of messages held.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs)
}

// Bytes returns the content bytes held.
func (h *History) Bytes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes
}

// trim drops the oldest messages until the bounds hold, and a leading
// assistant message that lost the user turn it answered.
func (h *History) trim() {
	drop := 0
	for len(h.msgs)-drop > h.maxMessages || h.bytes > h.maxBytes {
		h.bytes -= len(h.msgs[drop].Content)
		drop++
	}
	for drop > 0 && drop < len(h.msgs) && h.msgs[drop].Role == RoleAssistant {
		h.bytes -= len(h.msgs[drop].Content)
		drop++
	}
	if drop == 0 {
		return
	}
	// Copy down so the backing array does not grow without bound.
	n := copy(h.msgs, h.msgs[drop:])
	clear(h.msgs[n:])
	h.msgs = h.msgs[:n]
}

// tail returns the last at most n bytes of s, starting on a rune boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
