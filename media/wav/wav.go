// Package wav reads and writes RIFF/WAVE files of 16-bit linear PCM, the
// fixtures frontdoor's tests synthesize with espeak-ng and feed to Chromium.
package wav

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/frontdoorhq/frontdoor/media/pcm"
)

// MaxDataBytes bounds the sample data Decode accepts (about 35 minutes of
// 16 kHz mono), so a hostile header cannot make it allocate without limit.
const MaxDataBytes = 64 << 20

// ErrFormat reports a file that is not 16-bit PCM RIFF/WAVE.
var ErrFormat = errors.New("wav: not a 16-bit PCM WAVE file")

// Audio is interleaved PCM16 with its rate and channel count.
type Audio struct {
	SampleRate int
	Channels   int
	Samples    []int16
}

// Duration returns how long the audio plays.
func (a *Audio) Duration() time.Duration {
	if a.SampleRate <= 0 || a.Channels <= 0 {
		return 0
	}
	frames := len(a.Samples) / a.Channels
	return time.Duration(int64(frames) * int64(time.Second) / int64(a.SampleRate))
}

// Decode reads a WAVE stream, skipping chunks other than "fmt " and "data".
func Decode(r io.Reader) (*Audio, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("wav: header: %w", err)
	}
	if string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return nil, fmt.Errorf("wav: missing RIFF/WAVE magic: %w", ErrFormat)
	}
	a := &Audio{}
	gotFmt := false
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return nil, fmt.Errorf("wav: no data chunk: %w", ErrFormat)
		}
		id, size := string(ch[0:4]), binary.LittleEndian.Uint32(ch[4:])
		switch {
		case id == "fmt ":
			if size < 16 || size > 1024 {
				return nil, fmt.Errorf("wav: fmt chunk of %d bytes: %w", size, ErrFormat)
			}
			b := make([]byte, size+size%2)
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, fmt.Errorf("wav: fmt chunk: %w", err)
			}
			tag := binary.LittleEndian.Uint16(b[0:])
			a.Channels = int(binary.LittleEndian.Uint16(b[2:]))
			a.SampleRate = int(binary.LittleEndian.Uint32(b[4:]))
			bits := binary.LittleEndian.Uint16(b[14:])
			if tag == 0xFFFE && size >= 40 { // WAVE_FORMAT_EXTENSIBLE: the sub-format holds the tag
				tag = binary.LittleEndian.Uint16(b[24:])
			}
			if tag != 1 || bits != 16 || a.Channels < 1 || a.SampleRate < 1 {
				return nil, fmt.Errorf("wav: format tag %d, %d bits, %d channels: %w", tag, bits, a.Channels, ErrFormat)
			}
			gotFmt = true
		case id == "data":
			if !gotFmt {
				return nil, fmt.Errorf("wav: data before fmt: %w", ErrFormat)
			}
			if size > MaxDataBytes {
				return nil, fmt.Errorf("wav: %d bytes of data: %w", size, ErrFormat)
			}
			b := make([]byte, size)
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, fmt.Errorf("wav: data chunk: %w", err)
			}
			a.Samples, _ = pcm.Decode(make([]int16, 0, size/2), b[:size&^1])
			return a, nil
		default:
			if _, err := io.CopyN(io.Discard, r, int64(size)+int64(size%2)); err != nil {
				return nil, fmt.Errorf("wav: skipping %q: %w", id, err)
			}
		}
	}
}

// Encode writes a as a canonical 44-byte-header WAVE stream.
func Encode(w io.Writer, a *Audio) error {
	if a.Channels < 1 || a.SampleRate < 1 {
		return fmt.Errorf("wav: %d Hz, %d channels: %w", a.SampleRate, a.Channels, ErrFormat)
	}
	n := uint32(len(a.Samples) * 2)
	blockAlign := uint16(a.Channels * 2)
	h := make([]byte, 0, 44)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 36+n)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1) // PCM
	h = binary.LittleEndian.AppendUint16(h, uint16(a.Channels))
	h = binary.LittleEndian.AppendUint32(h, uint32(a.SampleRate))
	h = binary.LittleEndian.AppendUint32(h, uint32(a.SampleRate)*uint32(blockAlign))
	h = binary.LittleEndian.AppendUint16(h, blockAlign)
	h = binary.LittleEndian.AppendUint16(h, 16)
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, n)
	if _, err := w.Write(h); err != nil {
		return err
	}
	_, err := w.Write(pcm.Encode(make([]byte, 0, n), a.Samples))
	return err
}

// ReadFile decodes the WAVE file name.
func ReadFile(name string) (*Audio, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Decode(bufio.NewReader(f))
}

// WriteFile writes a to the file name.
func WriteFile(name string, a *Audio) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := Encode(bw, a); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
