package media

import (
	"fmt"
	"time"
)

// Encoding names how samples are stored in bytes.
type Encoding string

// Encodings frontdoor speaks.
const (
	PCM16 Encoding = "pcm16" // signed 16-bit little-endian linear PCM
	Mulaw Encoding = "mulaw" // G.711 µ-law, one byte per sample
	Alaw  Encoding = "alaw"  // G.711 A-law, one byte per sample
)

// FrameDuration is the frame length used for pacing, VAD and RTP packets.
const FrameDuration = 20 * time.Millisecond

// Format describes a mono or multi-channel audio stream.
type Format struct {
	Encoding   Encoding
	SampleRate int // samples per second per channel
	Channels   int
}

// Telephony is the format of Twilio Media Streams and RTP PCMU: 8 kHz mono µ-law.
var Telephony = Format{Encoding: Mulaw, SampleRate: 8000, Channels: 1}

// BytesPerSample is the size of one sample of one channel.
func (f Format) BytesPerSample() int {
	if f.Encoding == PCM16 {
		return 2
	}
	return 1
}

// SamplesPer returns how many samples per channel span d at this rate.
func (f Format) SamplesPer(d time.Duration) int {
	return int(int64(f.SampleRate) * int64(d) / int64(time.Second))
}

// BytesPer returns how many bytes span d in this format.
func (f Format) BytesPer(d time.Duration) int {
	ch := max(f.Channels, 1)
	return f.SamplesPer(d) * ch * f.BytesPerSample()
}

// Duration returns how long n bytes in this format play.
func (f Format) Duration(n int) time.Duration {
	per := f.BytesPerSample() * max(f.Channels, 1)
	if f.SampleRate <= 0 || per == 0 {
		return 0
	}
	return time.Duration(int64(n/per) * int64(time.Second) / int64(f.SampleRate))
}

// Validate reports whether f describes a usable stream.
func (f Format) Validate() error {
	switch f.Encoding {
	case PCM16, Mulaw, Alaw:
	default:
		return fmt.Errorf("media: unknown encoding %q", f.Encoding)
	}
	if f.SampleRate <= 0 || f.SampleRate > 192000 {
		return fmt.Errorf("media: sample rate %d out of range", f.SampleRate)
	}
	if f.Channels < 1 || f.Channels > 8 {
		return fmt.Errorf("media: %d channels out of range", f.Channels)
	}
	return nil
}

func (f Format) String() string {
	return fmt.Sprintf("%s/%d/%d", f.Encoding, f.SampleRate, f.Channels)
}
