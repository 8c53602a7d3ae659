package twilio

import "github.com/frontdoorhq/frontdoor/media/gateway"

// Wire structs: the JSON spelling of each dialect. Numbers that the protocol
// sends as strings (sequenceNumber, chunk, timestamp) are strings here, so a
// bare number is a type error, as it would be for Twilio.

type twWire struct {
	Event          string   `json:"event"`
	SequenceNumber string   `json:"sequenceNumber,omitempty"`
	StreamSid      string   `json:"streamSid,omitempty"`
	Protocol       string   `json:"protocol,omitempty"`
	Version        string   `json:"version,omitempty"`
	Start          *twStart `json:"start,omitempty"`
	Media          *wMedia  `json:"media,omitempty"`
	DTMF           *wDTMF   `json:"dtmf,omitempty"`
	Mark           *wMark   `json:"mark,omitempty"`
	Stop           *twStop  `json:"stop,omitempty"`
}

type twStart struct {
	StreamSid        string            `json:"streamSid"`
	AccountSid       string            `json:"accountSid"`
	CallSid          string            `json:"callSid"`
	Tracks           []string          `json:"tracks"`
	CustomParameters map[string]string `json:"customParameters"`
	MediaFormat      *twFormat         `json:"mediaFormat"`
}

type twFormat struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sampleRate"`
	Channels   int    `json:"channels"`
}

type twStop struct {
	AccountSid string `json:"accountSid"`
	CallSid    string `json:"callSid"`
}

// wMedia, wDTMF and wMark are spelled the same in both dialects.
type wMedia struct {
	Track     string  `json:"track,omitempty"`
	Chunk     string  `json:"chunk,omitempty"`
	Timestamp string  `json:"timestamp,omitempty"`
	Payload   *string `json:"payload"`
}

type wDTMF struct {
	Track string `json:"track,omitempty"`
	Digit string `json:"digit"`
}

type wMark struct {
	Name string `json:"name"`
}

// txWire is Telnyx's spelling. Its sequence_number is read as a string
// (Telnyx's examples) or a number (gateway.Count): Telnyx's pages are not
// consistent about it.
type txWire struct {
	Event          string        `json:"event"`
	SequenceNumber gateway.Count `json:"sequence_number,omitempty"`
	StreamID       string        `json:"stream_id,omitempty"`
	Version        string        `json:"version,omitempty"`
	Start          *txStart      `json:"start,omitempty"`
	Media          *wMedia       `json:"media,omitempty"`
	DTMF           *wDTMF        `json:"dtmf,omitempty"`
	Mark           *wMark        `json:"mark,omitempty"`
	Stop           *txStop       `json:"stop,omitempty"`
	Payload        *txError      `json:"payload,omitempty"`
}

type txStart struct {
	UserID           string            `json:"user_id"`
	CallControlID    string            `json:"call_control_id"`
	Tracks           []string          `json:"tracks,omitempty"`
	CustomParameters map[string]string `json:"custom_parameters"`
	MediaFormat      *txFormat         `json:"media_format"`
}

type txFormat struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sample_rate"`
	Channels   int    `json:"channels"`
}

type txStop struct {
	UserID        string `json:"user_id"`
	CallControlID string `json:"call_control_id"`
}

type txError struct {
	Code   int    `json:"code"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}
