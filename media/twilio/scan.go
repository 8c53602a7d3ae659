package twilio

// A media message, 50 a second per call, is the one message worth decoding
// without encoding/json's reflection. scanMedia reads only the plainest
// form of it: one object of the known keys, spelled exactly, each once,
// with string values of printable ASCII and no escapes, and a media object
// of the same kind. Anything else (another event, an unknown or
// differently cased key, a duplicate, null, a number, an escape, a byte
// outside printable ASCII, trailing data) is left to encoding/json, so
// that what scanMedia accepts decodes to the same wire struct as through
// encoding/json (FuzzScanMedia checks it).

// mediaKeys are a dialect's spellings of the top-level keys.
type mediaKeys struct{ seq, stream string }

var (
	twMediaKeys = mediaKeys{seq: "sequenceNumber", stream: "streamSid"}
	txMediaKeys = mediaKeys{seq: "sequence_number", stream: "stream_id"}
)

// scannedMedia is what scanMedia read: the fields of twWire or txWire a
// media message sets.
type scannedMedia struct {
	seq, stream string
	media       wMedia
	payload     string
}

// scanMedia reports ok if data is a plain media message in the spelling of
// k, and then what it holds.
func scanMedia(data []byte, k mediaKeys) (m scannedMedia, ok bool) {
	s := scanner{b: data}
	if !s.byte('{') {
		return m, false
	}
	var event, seq, stream, media bool
	for first := true; ; first = false {
		if s.byte('}') {
			break
		}
		if !first && !s.byte(',') {
			return m, false
		}
		key, ok := s.raw()
		if !ok || !s.byte(':') {
			return m, false
		}
		var seen *bool
		var dst *string
		switch string(key) {
		case "event":
			v, ok := s.raw()
			if !ok || string(v) != EventMedia {
				return m, false
			}
			seen = &event
		case k.seq:
			seen, dst = &seq, &m.seq
		case k.stream:
			seen, dst = &stream, &m.stream
		case "media":
			if media || !s.mediaObject(&m) {
				return m, false
			}
			media = true
			continue
		default:
			return m, false
		}
		if *seen {
			return m, false
		}
		*seen = true
		if dst != nil {
			if *dst, ok = s.str(); !ok {
				return m, false
			}
		}
	}
	s.space()
	return m, event && media && s.i == len(s.b)
}

// mediaObject reads the media object into m.
func (s *scanner) mediaObject(m *scannedMedia) bool {
	if !s.byte('{') {
		return false
	}
	var track, chunk, ts, payload bool
	for first := true; ; first = false {
		if s.byte('}') {
			return payload
		}
		if !first && !s.byte(',') {
			return false
		}
		key, ok := s.raw()
		if !ok || !s.byte(':') {
			return false
		}
		var seen *bool
		var dst *string
		switch string(key) {
		case "track":
			seen, dst = &track, &m.media.Track
		case "chunk":
			seen, dst = &chunk, &m.media.Chunk
		case "timestamp":
			seen, dst = &ts, &m.media.Timestamp
		case "payload":
			seen, dst = &payload, &m.payload
		default:
			return false
		}
		if *seen {
			return false
		}
		*seen = true
		if *dst, ok = s.str(); !ok {
			return false
		}
	}
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte skips white space and then c, if c is next.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (s *scanner) str() (string, bool) {
	b, ok := s.raw()
	return string(b), ok
}

// raw is str without the copy: the bytes between the quotes.
func (s *scanner) raw() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}
