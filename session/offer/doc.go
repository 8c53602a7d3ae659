// Package offer is the fallback bridge: the session.Fallback backed by
// package fallback. A refused caller hears the prompt table's sentence
// (with its audio, rendered outside the synthesis stage) and is offered
// only the fallbacks with room right now; its `callback` and `handoff`
// answers (messages, a phone caller's keypad through package
// session/telephony, or words) book a durable callback or wait for an
// agent.
package offer
