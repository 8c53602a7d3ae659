package backend_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/session/backend"
)

// A barge-in cut the reply short: the history keeps only what the caller
// heard, so the next turn's model request does not pretend the rest was said.
func ExampleHistory_ReplaceLastAssistant() {
	h := backend.NewHistory(16, 4096)
	h.Add(backend.Message{Role: backend.RoleUser, Content: "What are your opening hours?"})
	h.Add(backend.Message{Role: backend.RoleAssistant, Content: "We open at nine and close at five, except on Sundays when"})
	h.ReplaceLastAssistant("We open at nine")
	for _, m := range h.Messages() {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// user: What are your opening hours?
	// assistant: We open at nine
}
