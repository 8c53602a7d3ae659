package gateway

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/frontdoorhq/frontdoor/media"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
)

// UnmarshalJSON decodes data into v and turns a failure into a *DecodeError
// that names the field of a wrong JSON type. Unknown fields are accepted
// (gateways add them).
func UnmarshalJSON(dialect, event string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Errorf(dialect, event, te.Field, ErrMalformed, "%s where %s belongs", te.Value, te.Type)
		}
		return Errorf(dialect, event, "", ErrMalformed, "%v", err)
	}
	return nil
}

// MarshalJSON appends the JSON of v to dst. v must be made of strings,
// numbers, maps of strings and pointers to such structs, which cannot fail.
func MarshalJSON(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("gateway: MarshalJSON: " + err.Error()) // a programming error in a codec's wire struct
	}
	return append(dst, b...)
}

// DecodeBase64 decodes a base64 media payload.
func DecodeBase64(dialect, event, field, s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, Errorf(dialect, event, field, ErrPayload, "%v", err)
	}
	return b, nil
}

// EncodeBase64 returns the base64 of b.
func EncodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// ParseCount parses one of the numbers that some dialects send as strings.
// An empty string is 0 unless required.
func ParseCount(dialect, event, field, s string, required bool) (int64, error) {
	if s == "" {
		if required {
			return 0, Missing(dialect, event, field)
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, Errorf(dialect, event, field, ErrMalformed, "%q is not a count", s)
	}
	return n, nil
}

// Count is a number that a dialect documents as a JSON string but whose
// provider's own clients also send as a JSON number (Exotel's
// sequence_number, chunk and sample_rate): it reads either, and null as
// empty, keeping the text for ParseCount; it is written as a string, as
// documented.
type Count string

// UnmarshalJSON reads a JSON string, number or null.
func (c *Count) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Count(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*c = Count(n)
	return nil
}

// Number is a number that a dialect documents as a JSON number but that
// its provider's clients may also send as a string: it reads either (and
// null as 0) and is written as a number, as documented.
type Number int64

// UnmarshalJSON reads a JSON number, a string holding an integer, or null.
func (n *Number) UnmarshalJSON(b []byte) error {
	var c Count
	if err := c.UnmarshalJSON(b); err != nil {
		return err
	}
	if c == "" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(string(c), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", string(c))
	}
	*n = Number(v)
	return nil
}

// FormatCount renders n for a dialect that sends numbers as strings; 0 is "".
func FormatCount(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// L16 returns the format of mono 16-bit linear PCM at rate.
func L16(rate int) media.Format {
	return media.Format{Encoding: media.PCM16, SampleRate: rate, Channels: 1}
}

// Silence returns the byte that pads a frame of format f with silence.
func Silence(f media.Format) byte {
	switch f.Encoding {
	case media.Mulaw:
		return g711.MulawSilence
	case media.Alaw:
		return g711.AlawSilence
	}
	return 0
}

// ParseContentType reads the audio content types of the form
// "audio/l16;rate=16000", "audio/x-l16;rate=8000", "audio/x-mulaw;rate=8000"
// (Vonage, Plivo). A missing rate is 8000.
func ParseContentType(s string) (media.Format, bool) {
	typ, params, _ := strings.Cut(strings.ToLower(strings.ReplaceAll(s, " ", "")), ";")
	rate := 8000
	for p := range strings.SplitSeq(params, ";") {
		if v, ok := strings.CutPrefix(p, "rate="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 || n > 192000 {
				return media.Format{}, false
			}
			rate = n
		}
	}
	switch typ {
	case "audio/l16", "audio/x-l16":
		return L16(rate), true
	case "audio/x-mulaw", "audio/mulaw", "audio/pcmu":
		return media.Format{Encoding: media.Mulaw, SampleRate: rate, Channels: 1}, true
	case "audio/x-alaw", "audio/alaw", "audio/pcma":
		return media.Format{Encoding: media.Alaw, SampleRate: rate, Channels: 1}, true
	}
	return media.Format{}, false
}

// AppendPCM appends samples to dst encoded in format f (µ-law, A-law or
// little-endian PCM16).
func AppendPCM(dst []byte, f media.Format, samples []int16) []byte {
	switch f.Encoding {
	case media.Mulaw:
		return g711.EncodeMulaw(dst, samples)
	case media.Alaw:
		return g711.EncodeAlaw(dst, samples)
	}
	return pcm.Encode(dst, samples)
}

// DecodePCM appends the samples of audio in format f to dst.
func DecodePCM(dst []int16, f media.Format, audio []byte) ([]int16, error) {
	switch f.Encoding {
	case media.Mulaw:
		return g711.DecodeMulaw(dst, audio), nil
	case media.Alaw:
		return g711.DecodeAlaw(dst, audio), nil
	}
	return pcm.Decode(dst, audio)
}

// DecodeJSONText checks that f is a text frame of at most max bytes and
// decodes it into v, for the dialects whose every message is JSON text.
func DecodeJSONText(dialect string, f Frame, max int, v any) error {
	if err := CheckSize(dialect, f, max); err != nil {
		return err
	}
	if f.Binary {
		return Errorf(dialect, "", "", ErrMalformed, "binary frame (%s sends JSON text)", dialect)
	}
	return UnmarshalJSON(dialect, "", f.Data, v)
}
