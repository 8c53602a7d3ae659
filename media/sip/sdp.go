package sip

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"
)

// Codec is a G.711 variant an RTP stream carries.
type Codec struct {
	Name        string // "PCMU" or "PCMA"
	PayloadType uint8  // 0 or 8 (static, RFC 3551)
}

// The codecs a call can carry.
var (
	PCMU = Codec{Name: "PCMU", PayloadType: 0}
	PCMA = Codec{Name: "PCMA", PayloadType: 8}
)

func (c Codec) String() string { return c.Name }

// silence is the codec byte for a zero sample.
func (c Codec) silence() byte {
	if c == PCMA {
		return 0xD5
	}
	return 0xFF
}

// Errors of session descriptions.
var (
	// ErrNoOffer reports an INVITE without an SDP offer (a late offer), which
	// this package does not answer.
	ErrNoOffer = errors.New("sip: INVITE carries no SDP offer")
	// ErrBadSDP reports a session description that does not parse or has
	// no usable audio stream.
	ErrBadSDP = errors.New("sip: unusable SDP")
	// ErrNoCodec reports an offer with neither PCMU nor PCMA (among the
	// codecs configured).
	ErrNoCodec = errors.New("sip: no common codec (PCMU, PCMA)")
)

// maxSDP bounds the session description read from a peer.
const maxSDP = 16 << 10

// mediaOffer is what the package uses of an SDP offer or answer: where to
// send RTP, the codecs in the peer's order and the telephone-event type.
type mediaOffer struct {
	Addr    netip.AddrPort
	Codecs  []Codec
	EventPT int // payload type of telephone-event/8000, or -1
	Dir     string
	PtimeMS int
}

// parseSDP reads the first RTP/AVP audio stream of a session description.
func parseSDP(body []byte) (mediaOffer, error) {
	if len(body) == 0 {
		return mediaOffer{}, ErrNoOffer
	}
	if len(body) > maxSDP {
		return mediaOffer{}, fmt.Errorf("%w: %d bytes, limit %d", ErrBadSDP, len(body), maxSDP)
	}
	var s sdp.SessionDescription
	if err := s.UnmarshalString(string(body)); err != nil {
		return mediaOffer{}, fmt.Errorf("%w: %v", ErrBadSDP, err)
	}
	for _, m := range s.MediaDescriptions {
		if m.MediaName.Media != "audio" || strings.Join(m.MediaName.Protos, "/") != "RTP/AVP" {
			continue
		}
		if m.MediaName.Port.Value <= 0 || m.MediaName.Port.Value > 65535 {
			continue // a rejected or disabled stream
		}
		conn := m.ConnectionInformation
		if conn == nil {
			conn = s.ConnectionInformation
		}
		if conn == nil || conn.Address == nil {
			return mediaOffer{}, fmt.Errorf("%w: audio stream without a connection address", ErrBadSDP)
		}
		ip, err := netip.ParseAddr(conn.Address.Address)
		if err != nil {
			return mediaOffer{}, fmt.Errorf("%w: connection address %q is not an IP address", ErrBadSDP, conn.Address.Address)
		}
		o := mediaOffer{
			Addr:    netip.AddrPortFrom(ip, uint16(m.MediaName.Port.Value)),
			EventPT: -1,
			Dir:     "sendrecv",
		}
		names := map[int]string{}
		for _, a := range m.Attributes {
			switch a.Key {
			case "rtpmap":
				pt, rest, ok := strings.Cut(a.Value, " ")
				n, err := strconv.Atoi(pt)
				if ok && err == nil && n >= 0 && n < 128 {
					names[n] = strings.ToLower(rest)
				}
			case "ptime":
				o.PtimeMS, _ = strconv.Atoi(a.Value)
			case "sendrecv", "sendonly", "recvonly", "inactive":
				o.Dir = a.Key
			}
		}
		for _, f := range m.MediaName.Formats {
			pt, err := strconv.Atoi(f)
			if err != nil || pt < 0 || pt > 127 {
				continue
			}
			name, mapped := names[pt]
			switch {
			case pt == 0 && (!mapped || strings.HasPrefix(name, "pcmu/8000")),
				mapped && strings.HasPrefix(name, "pcmu/8000"):
				o.Codecs = append(o.Codecs, Codec{Name: "PCMU", PayloadType: uint8(pt)})
			case pt == 8 && (!mapped || strings.HasPrefix(name, "pcma/8000")),
				mapped && strings.HasPrefix(name, "pcma/8000"):
				o.Codecs = append(o.Codecs, Codec{Name: "PCMA", PayloadType: uint8(pt)})
			case mapped && name == "telephone-event/8000" && o.EventPT < 0:
				o.EventPT = pt
			}
		}
		return o, nil
	}
	return mediaOffer{}, fmt.Errorf("%w: no RTP/AVP audio stream", ErrBadSDP)
}

// choose returns the first codec of prefer that the offer carries, with the
// offer's payload type for it.
func (o mediaOffer) choose(prefer []Codec) (Codec, error) {
	for _, want := range prefer {
		for _, c := range o.Codecs {
			if c.Name == want.Name {
				return c, nil
			}
		}
	}
	return Codec{}, ErrNoCodec
}

// describe writes a session description with one audio stream at addr: the
// codecs in order and, when eventPT >= 0, telephone-event 0-16.
func describe(sessionID uint64, addr netip.AddrPort, codecs []Codec, eventPT int) []byte {
	ip := addr.Addr()
	family := "IP4"
	if ip.Is6() && !ip.Is4In6() {
		family = "IP6"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=frontdoor %d %d IN %s %s\r\ns=frontdoor\r\nc=IN %s %s\r\nt=0 0\r\n",
		sessionID, sessionID, family, ip, family, ip)
	fmt.Fprintf(&b, "m=audio %d RTP/AVP", addr.Port())
	for _, c := range codecs {
		fmt.Fprintf(&b, " %d", c.PayloadType)
	}
	if eventPT >= 0 {
		fmt.Fprintf(&b, " %d", eventPT)
	}
	b.WriteString("\r\n")
	for _, c := range codecs {
		fmt.Fprintf(&b, "a=rtpmap:%d %s/8000\r\n", c.PayloadType, c.Name)
	}
	if eventPT >= 0 {
		fmt.Fprintf(&b, "a=rtpmap:%d telephone-event/8000\r\na=fmtp:%d 0-16\r\n", eventPT, eventPT)
	}
	b.WriteString("a=ptime:20\r\na=sendrecv\r\n")
	return []byte(b.String())
}
