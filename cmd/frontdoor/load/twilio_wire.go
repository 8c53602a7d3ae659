package load

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/frontdoorhq/frontdoor/media/g711"
)

// The Twilio Media Streams wire as a gateway sees it (docs/TELEPHONY.md).
// Like wire.go, the package spells the messages itself, so that it tests
// the protocol rather than sharing the server's codec.

// twMaxMessage bounds one message from the server; Twilio's own media
// messages are far smaller.
const twMaxMessage = 64 << 10

// Gateway messages. sequenceNumber, chunk and timestamp are strings on
// this wire; sampleRate and channels are numbers.
type (
	twConnected struct {
		Event    string `json:"event"` // "connected"
		Protocol string `json:"protocol"`
		Version  string `json:"version"`
	}
	twStart struct {
		Event          string      `json:"event"` // "start"
		SequenceNumber string      `json:"sequenceNumber"`
		StreamSid      string      `json:"streamSid"`
		Start          twStartBody `json:"start"`
	}
	twStartBody struct {
		StreamSid        string            `json:"streamSid"`
		AccountSid       string            `json:"accountSid"`
		CallSid          string            `json:"callSid"`
		Tracks           []string          `json:"tracks"`
		CustomParameters map[string]string `json:"customParameters"`
		MediaFormat      twFormat          `json:"mediaFormat"`
	}
	twFormat struct {
		Encoding   string `json:"encoding"`
		SampleRate int    `json:"sampleRate"`
		Channels   int    `json:"channels"`
	}
	twMarkEcho struct {
		Event          string `json:"event"` // "mark"
		SequenceNumber string `json:"sequenceNumber"`
		StreamSid      string `json:"streamSid"`
		Mark           twName `json:"mark"`
	}
	twName struct {
		Name string `json:"name"`
	}
	twStop struct {
		Event          string     `json:"event"` // "stop"
		SequenceNumber string     `json:"sequenceNumber"`
		StreamSid      string     `json:"streamSid"`
		Stop           twStopBody `json:"stop"`
	}
	twStopBody struct {
		AccountSid string `json:"accountSid"`
		CallSid    string `json:"callSid"`
	}
)

// twOutbound is what the server sends: media, mark or clear.
type twOutbound struct {
	Event     string `json:"event"`
	StreamSid string `json:"streamSid"`
	Media     *struct {
		Payload *string `json:"payload"`
	} `json:"media"`
	Mark *twName `json:"mark"`
}

// errTwilioWire reports a message from the server that a Twilio gateway
// would not take.
var errTwilioWire = errors.New("load: bad Twilio message from server")

// decodeOutbound checks one server message as a gateway would and returns
// its kind, the µ-law bytes of a media payload and the name of a mark. buf
// is scratch space for the payload's decoding.
func decodeOutbound(data []byte, streamSid string, buf []byte) (kind twKind, n int, mark string, err error) {
	var o twOutbound
	if err := json.Unmarshal(data, &o); err != nil {
		return 0, 0, "", fmt.Errorf("%w: %v", errTwilioWire, err)
	}
	if o.StreamSid != streamSid {
		return 0, 0, "", fmt.Errorf("%w: %s for stream %q, not %q", errTwilioWire, o.Event, o.StreamSid, streamSid)
	}
	switch o.Event {
	case "media":
		if o.Media == nil || o.Media.Payload == nil {
			return 0, 0, "", fmt.Errorf("%w: media without payload", errTwilioWire)
		}
		p := *o.Media.Payload
		if need := base64.StdEncoding.DecodedLen(len(p)); need > len(buf) {
			buf = make([]byte, need) // larger than a frame: rare, and bounded by the read limit
		}
		n, err := base64.StdEncoding.Decode(buf, []byte(p))
		if err != nil {
			return 0, 0, "", fmt.Errorf("%w: media payload: %v", errTwilioWire, err)
		}
		return twMedia, n, "", nil
	case "mark":
		if o.Mark == nil || o.Mark.Name == "" {
			return 0, 0, "", fmt.Errorf("%w: mark without a name", errTwilioWire)
		}
		return twMark, 0, o.Mark.Name, nil
	case "clear":
		return twClear, 0, "", nil
	}
	return 0, 0, "", fmt.Errorf("%w: event %q", errTwilioWire, o.Event)
}

// appendMedia appends a media message carrying ulaw to b without
// allocating: one goes out every 20 ms per caller.
func appendMedia(b []byte, seq, chunk int64, timestampMS int64, streamSid string, ulaw []byte) []byte {
	b = append(b, `{"event":"media","sequenceNumber":"`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `","streamSid":"`...)
	b = append(b, streamSid...) // letters and digits only
	b = append(b, `","media":{"track":"inbound","chunk":"`...)
	b = strconv.AppendInt(b, chunk, 10)
	b = append(b, `","timestamp":"`...)
	b = strconv.AppendInt(b, timestampMS, 10)
	b = append(b, `","payload":"`...)
	b = base64.StdEncoding.AppendEncode(b, ulaw)
	return append(b, `"}}`...)
}

// twilioSignature is X-Twilio-Signature for a WebSocket upgrade: base64 of
// HMAC-SHA1, keyed with the auth token, over the stream URL exactly as the
// TwiML gives it (an upgrade has no POST parameters to append).
func twilioSignature(authToken, streamURL string) string {
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(streamURL))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Synthetic speech. The server hears speech with an energy detector
// (media/vad: a 20 ms frame at -40 dBFS or above is loud; 60 ms of loud
// frames start speech and 500 ms of quiet ones end it). The voice is a
// 125 Hz buzz, its harmonics shaped by two formant-like peaks (500 Hz and
// 1.5 kHz), whose loudness rises and falls four times a second like
// syllables: about -17 dBFS at a syllable's peak and -27 dBFS at its
// trough, so every frame of an utterance is loud, and nothing else is.
const (
	telephonyRate = 8000
	frameSamples  = telephonyRate * 20 / 1000 // 160: one 20 ms frame
	voicePeriod   = telephonyRate / 125       // samples of one glottal period
	syllable      = telephonyRate / 4         // samples of one syllable
)

var voiceWave = func() (w [voicePeriod]float64) {
	peak := 0.0
	for i := range w {
		for k := 1; k <= 16; k++ {
			f := 125 * float64(k)
			gain := (1 + 2*math.Exp(-sq((f-500)/150)) + 1.5*math.Exp(-sq((f-1500)/250))) / float64(k)
			w[i] += gain * math.Sin(2*math.Pi*f*float64(i)/telephonyRate)
		}
		peak = max(peak, math.Abs(w[i]))
	}
	for i := range w {
		w[i] /= peak
	}
	return w
}()

func sq(x float64) float64 { return x * x }

// voice generates the synthetic speech, one frame at a time.
type voice struct {
	n int // samples generated
}

// frame appends one 20 ms frame of speech as µ-law to dst.
func (v *voice) frame(dst []byte, pcm *[frameSamples]int16) []byte {
	for i := range pcm {
		s := v.n + i
		env := 0.3 + 0.7*math.Abs(math.Sin(math.Pi*float64(s%syllable)/syllable))
		pcm[i] = int16(0.4 * 32767 * env * voiceWave[s%voicePeriod])
	}
	v.n += frameSamples
	return g711.EncodeMulaw(dst, pcm[:])
}

// silenceFrame is 20 ms of µ-law silence.
var silenceFrame = func() (b [frameSamples]byte) {
	for i := range b {
		b[i] = g711.MulawSilence
	}
	return b
}()
