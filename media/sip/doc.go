// Package sip answers SIP calls itself: a user-agent server on UDP and TCP
// (built on github.com/emiago/sipgo) that hands each INVITE to a Handler,
// and the call's media as G.711 RTP. It has no notion of admission or
// sessions; the Handler decides.
//
// A Handler works like an http.Handler: ServeSIP runs for the whole call.
// It reads who is calling (Call.RequestURI, From, To, CallID and Tenant,
// from the request URI's user part, the authenticated user or a header, as
// Config.Tenant says) and then answers or rejects. Call.Answer negotiates
// PCMU or PCMA from the caller's SDP offer (and RFC 4733 telephone-event
// when offered) and returns the call's Media: received 20 ms frames, decoded
// to PCM, on Media.Frames; DTMF digits, one per key press, on Media.Digits;
// outbound audio queued with Write (in the call's codec), WritePCM or
// WriteMulaw and sent in real time,
// one 20 ms packet at a time with consecutive sequence numbers, timestamps
// that follow the sample clock and one SSRC; Media.Clear drops what is
// queued at once (barge-in) and Media.Drain waits for it to be sent
// (Media.Flush says so on a channel instead of waiting). A BYE
// or a CANCEL from the caller ends the call (Call.Done, Call.Err);
// Call.Hangup sends BYE; Call.Reject refuses a call still ringing.
//
// With Config.Auth callers are challenged with RFC 3261 digest
// authentication (MD5, qop=auth; stateless nonces that expire); a wrong
// password or an unknown user gets 403, and no Handler sees the call.
//
// # Refusals are answered, not rejected
//
// frontdoor answers a caller it refuses at the session stage (all lines
// busy, the waiting line full), plays the refusal prompt and then hangs up,
// instead of rejecting the INVITE with 486 Busy Here or 503 Service
// Unavailable. The caller hears the truthful reason and what it can do
// ("press 1 to be called back"), and the keypad can take the offer, which a
// 4xx or 5xx cannot carry: most phones and carriers turn a 503 into a
// generic failure tone or announcement, and some trunks retry a 503 on
// another route, which is more load at the worst moment. Reject remains for
// what is not a refusal of service: a caller that fails authentication, a
// call the Handler will not take at all (603 Decline), or a server that
// is closing or over Config.MaxCalls (503 before any Handler runs).
//
// Dial is the client side: it places a call with a PCMU/PCMA offer,
// answers a digest challenge, and gives the same Media, for tests and for
// load runs.
package sip
