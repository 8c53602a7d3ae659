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
// authentication (MD5, qop=auth): nonces are the server's own (an HMAC of
// their issue time), expire (401 with stale=true), and are taken once, or
// again only with a growing nc (RFC 7616 section 3.3), so a captured
// Authorization sent again is refused (401, stale=true; Stats counts it);
// a wrong password or an unknown user gets 403, and no Handler sees the
// call.
//
// # Bounds
//
// One source cannot take the server from others: an INVITE is pending
// until its ACK, and one address (an IPv6 /64) holds at most
// Config.MaxPendingPerAddr pending INVITEs (the next gets 503); TCP
// connections are bounded per address and in all (Config.MaxTCPPerAddr,
// MaxTCP: one over is closed as it is accepted), and one that carries no
// byte and no call for Config.TCPIdle is closed. RTP goes only where it
// is wanted: at once to an SDP address on the signalling host (whose ACK
// proved it receives), otherwise only once that address, or the
// signalling host (a phone behind NAT), has sent the call's RTP; the
// first RTP source is latched and every datagram from elsewhere is
// dropped and counted. Server.Stats reports all of it.
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
// call the Handler will not take at all (603 Decline). A server that is
// closing, over Config.MaxCalls, or that Config.Busy says should take
// nothing now (a drain) answers 503 with Retry-After before any Handler
// runs, and OPTIONS the same, so that a trunk fails over to another route
// and its health checks mark this one down; otherwise OPTIONS and a 200 OK
// carry Allow and Supported.
//
// Dial is the client side: it places a call with a PCMU/PCMA offer,
// answers a digest challenge, and gives the same Media, for tests and for
// load runs.
package sip
