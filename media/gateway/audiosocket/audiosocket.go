// Package audiosocket is Asterisk's AudioSocket protocol, a small framing of
// audio over TCP (the AudioSocket() dialplan application and channel
// driver, and ARI external media with transport audiosocket), as a
// gateway.Codec with its own gateway.Link over a net.Conn.
//
// It follows the protocol definition on the AudioSocket page of the Asterisk
// documentation (docs.asterisk.org/Configuration/Channel-Drivers/AudioSocket)
// and in github.com/CyCoreSystems/audiosocket: every message is a one-byte
// kind, a 16-bit big-endian payload length and the payload.
//
//	0x00  hang-up (no payload); either side
//	0x01  the stream's UUID, 16 bytes; Asterisk's first message
//	0x03  a DTMF digit, one ASCII byte
//	0x10  audio: signed linear 16-bit little-endian mono PCM at 8 kHz
//	0x12  the same at 16 kHz (0x11 12 kHz, 0x13 24, 0x14 32, 0x16 48)
//	0xff  an error, with an optional application-specific code
//
// Which rate a stream uses is set in Asterisk (the dialplan, the codec of
// the channel), not announced on the socket: the Codec is told (SampleRate,
// default 8000) and refuses audio of another kind. The AudioSocket page as
// of late 2026 numbers the higher rates 0x11 to 0x16 as above; an earlier
// change to it gave 0x11 to 16 kHz, so only 0x10 and the table above are
// taken as settled. AudioSocket has no marks and no clear: audio sent is
// audio played, and the Conn paces it in real time, so what the caller heard
// at a barge-in is what had been sent (the Tracker's clock), and a clear
// drops only the Conn's own queue.
package audiosocket

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// Message kinds.
const (
	KindHangup byte = 0x00
	KindUUID   byte = 0x01
	KindDTMF   byte = 0x03
	KindSlin   byte = 0x10 // 8 kHz
	KindError  byte = 0xff
)

// HeaderSize is the size of a message's kind and length.
const HeaderSize = 3

// MaxMessageSize is the largest message the framing can carry.
const MaxMessageSize = HeaderSize + 0xffff

const name = "audiosocket"

// audioKinds maps the audio kinds to their sample rates.
var audioKinds = map[byte]int{0x10: 8000, 0x11: 12000, 0x12: 16000, 0x13: 24000, 0x14: 32000, 0x16: 48000}

func kindFor(rate int) (byte, bool) {
	for k, r := range audioKinds {
		if r == rate {
			return k, true
		}
	}
	return 0, false
}

// Codec is AudioSocket at one sample rate.
//
// The kind byte of audio above 8 kHz has changed in Asterisk's history:
// the AudioSocket page's table (above) gives 16 kHz 0x12, while recent
// Asterisk releases send slin16 as 0x11. A reader of a 16 kHz stream
// accepts both; a Codec made by NewCodec then writes its audio with the
// kind the peer itself sends (until the peer's first audio, the table's),
// so that Asterisk plays it whichever numbering it has.
type Codec struct {
	SampleRate int // of the stream's audio; default 8000

	peerKind *atomic.Uint32 // the audio kind the peer sends (NewCodec), 0 until its first
}

// NewCodec returns the Codec of a stream at rate Hz (0: 8000) that answers
// in the audio kind its peer uses.
func NewCodec(rate int) Codec { return Codec{SampleRate: rate, peerKind: new(atomic.Uint32)} }

// KindSlin16Alt is the kind recent Asterisk releases send 16 kHz audio as.
const KindSlin16Alt byte = 0x11

// rateOf is the sample rate of audio kind k on a stream at c's rate.
func (c Codec) rateOf(k byte) (int, bool) {
	if k == KindSlin16Alt && c.rate() == 16000 {
		return 16000, true
	}
	r, ok := audioKinds[k]
	return r, ok
}

func (c Codec) rate() int {
	if c.SampleRate == 0 {
		return 8000
	}
	return c.SampleRate
}

// Name returns "audiosocket".
func (Codec) Name() string { return name }

// Capabilities: DTMF and hang-up; no marks, no clear; slin at the Codec's
// rate.
func (c Codec) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{DTMF: true, Hangup: true, Formats: []media.Format{gateway.L16(c.rate())}, MaxMessage: MaxMessageSize}
}

// Append appends one message of kind k to dst.
func Append(dst []byte, k byte, payload []byte) ([]byte, error) {
	if len(payload) > 0xffff {
		return nil, gateway.Errorf(name, "", "", gateway.ErrTooLarge, "payload of %d bytes", len(payload))
	}
	dst = append(dst, k, 0, 0)
	binary.BigEndian.PutUint16(dst[len(dst)-2:], uint16(len(payload)))
	return append(dst, payload...), nil
}

// split checks a whole message and returns its kind and payload.
func split(f gateway.Frame) (byte, []byte, error) {
	if err := gateway.CheckSize(name, f, MaxMessageSize); err != nil {
		return 0, nil, err
	}
	if len(f.Data) < HeaderSize {
		return 0, nil, gateway.Errorf(name, "", "", gateway.ErrMalformed, "%d bytes is shorter than a header", len(f.Data))
	}
	if n := int(binary.BigEndian.Uint16(f.Data[1:])); n != len(f.Data)-HeaderSize {
		return 0, nil, gateway.Errorf(name, kindName(f.Data[0]), "length", gateway.ErrMalformed, "header says %d bytes, %d follow", n, len(f.Data)-HeaderSize)
	}
	return f.Data[0], f.Data[HeaderSize:], nil
}

func kindName(k byte) string {
	switch k {
	case KindHangup:
		return "hangup"
	case KindUUID:
		return "uuid"
	case KindDTMF:
		return "dtmf"
	case KindError:
		return "error"
	}
	if r, ok := audioKinds[k]; ok {
		return fmt.Sprintf("slin%d", r)
	}
	return fmt.Sprintf("kind 0x%02x", k)
}

func (c Codec) audio(k byte, p []byte) ([]byte, error) {
	r, _ := c.rateOf(k)
	if r != c.rate() {
		return nil, gateway.Errorf(name, kindName(k), "", gateway.ErrUnsupported, "%d Hz audio on a %d Hz stream", r, c.rate())
	}
	if len(p)%2 != 0 {
		return nil, gateway.Errorf(name, kindName(k), "", gateway.ErrPayload, "%d bytes is not whole samples", len(p))
	}
	return p, nil
}

// Decode parses one message from Asterisk.
func (c Codec) Decode(f gateway.Frame) (gateway.Event, error) {
	k, p, err := split(f)
	if err != nil {
		return gateway.Event{}, err
	}
	ev := gateway.Event{Name: kindName(k)}
	switch k {
	case KindHangup:
		ev.Kind = gateway.KindStop
	case KindUUID:
		if len(p) != 16 {
			return ev, gateway.Errorf(name, ev.Name, "", gateway.ErrMalformed, "%d bytes, a UUID has 16", len(p))
		}
		ev.Kind = gateway.KindStart
		ev.Start = &gateway.Start{StreamID: formatUUID(p), Format: gateway.L16(c.rate())}
	case KindDTMF:
		if len(p) != 1 || !slices.Contains([]byte("0123456789*#ABCD"), p[0]) {
			return ev, gateway.Errorf(name, ev.Name, "", gateway.ErrMalformed, "%q is not a DTMF digit", p)
		}
		ev.Kind, ev.Digit = gateway.KindDTMF, string(p)
	case KindError:
		ev.Kind, ev.Err = gateway.KindError, &gateway.GatewayError{Code: hex.EncodeToString(p), Message: errorText(p)}
	default:
		r, ok := c.rateOf(k)
		if !ok {
			return ev, gateway.Errorf(name, ev.Name, "", gateway.ErrUnknownEvent, "")
		}
		ev.Kind, ev.Name = gateway.KindMedia, fmt.Sprintf("slin%d", r)
		if ev.Audio, err = c.audio(k, p); err != nil {
			return ev, err
		}
		if c.peerKind != nil {
			c.peerKind.Store(uint32(k))
		}
	}
	return ev, nil
}

// errorText names Asterisk's own error codes.
func errorText(p []byte) string {
	if len(p) != 1 {
		return ""
	}
	switch p[0] {
	case 0x01:
		return "hangup of calling party"
	case 0x02:
		return "frame forwarding error"
	case 0x04:
		return "memory (allocation) error"
	}
	return ""
}

func formatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ParseUUID reads the string form of a UUID.
func ParseUUID(s string) ([]byte, error) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return nil, fmt.Errorf("audiosocket: %q is not a UUID", s)
	}
	b, err := hex.DecodeString(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:])
	if err != nil {
		return nil, fmt.Errorf("audiosocket: %q is not a UUID", s)
	}
	return b, nil
}

// audioKind is the kind of the audio c writes: the peer's own, once seen.
func (c Codec) audioKind() (byte, bool) {
	if c.peerKind != nil {
		if k := c.peerKind.Load(); k != 0 {
			return byte(k), true
		}
	}
	return kindFor(c.rate())
}

// Encode renders a command to Asterisk: audio or hang-up.
func (c Codec) Encode(dst []byte, cmd gateway.Command) (gateway.Frame, error) {
	var err error
	switch cmd.Kind {
	case gateway.KindAudio:
		k, ok := c.audioKind()
		if !ok {
			return gateway.Frame{}, gateway.ErrUnsupported
		}
		dst, err = Append(dst, k, cmd.Audio)
	case gateway.KindHangup:
		dst, err = Append(dst, KindHangup, nil)
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	return gateway.Frame{Binary: true, Data: dst}, err
}

// EncodeEvent renders an event as Asterisk sends it (for simulators). The
// stream's StreamID must be a UUID.
func (c Codec) EncodeEvent(dst []byte, e gateway.Event) (gateway.Frame, error) {
	var err error
	switch e.Kind {
	case gateway.KindStart:
		var id []byte
		if id, err = ParseUUID(e.Start.StreamID); err != nil {
			return gateway.Frame{}, fmt.Errorf("%w: %v", gateway.ErrUnsupported, err)
		}
		dst, err = Append(dst, KindUUID, id)
	case gateway.KindMedia:
		return c.Encode(dst, gateway.Command{Kind: gateway.KindAudio, Audio: e.Audio})
	case gateway.KindDTMF:
		if len(e.Digit) != 1 {
			return gateway.Frame{}, gateway.ErrUnsupported
		}
		dst, err = Append(dst, KindDTMF, []byte(e.Digit))
	case gateway.KindStop:
		dst, err = Append(dst, KindHangup, nil)
	case gateway.KindError:
		var code []byte
		if code, err = hex.DecodeString(e.Err.Code); err != nil {
			return gateway.Frame{}, gateway.ErrUnsupported
		}
		dst, err = Append(dst, KindError, code)
	default:
		return gateway.Frame{}, gateway.ErrUnsupported
	}
	return gateway.Frame{Binary: true, Data: dst}, err
}

// DecodeCommand parses a message sent to Asterisk, as Asterisk would.
func (c Codec) DecodeCommand(f gateway.Frame) (gateway.Command, error) {
	k, p, err := split(f)
	if err != nil {
		return gateway.Command{}, err
	}
	switch k {
	case KindHangup:
		return gateway.Command{Kind: gateway.KindHangup}, nil
	case KindUUID, KindDTMF, KindError:
		return gateway.Command{}, gateway.Errorf(name, kindName(k), "", gateway.ErrUnknownEvent, "not sent to Asterisk")
	}
	if _, ok := c.rateOf(k); !ok {
		return gateway.Command{}, gateway.Errorf(name, kindName(k), "", gateway.ErrUnknownEvent, "")
	}
	a, err := c.audio(k, p)
	return gateway.Command{Kind: gateway.KindAudio, Format: gateway.L16(c.rate()), Audio: a}, err
}
