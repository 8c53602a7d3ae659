package espeak

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxHeader bounds how many bytes of chunks may precede the WAV data.
const maxHeader = 4096

var errBadWAV = errors.New("bad WAV header")

// readWAVHeader reads a RIFF/WAVE header up to the start of the data chunk
// and returns the sample rate. It accepts only PCM16 mono, and ignores the
// RIFF and data sizes, which a writer to a pipe cannot know (espeak-ng
// writes 0x7ffff000 as a placeholder).
func readWAVHeader(r io.Reader) (rate int, err error) {
	var riff [12]byte
	if _, err := io.ReadFull(r, riff[:]); err != nil {
		return 0, fmt.Errorf("%w: %w", errBadWAV, err)
	}
	if string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return 0, fmt.Errorf("%w: not RIFF/WAVE", errBadWAV)
	}
	seen := 12
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return 0, fmt.Errorf("%w: %w", errBadWAV, err)
		}
		id, size := string(ch[0:4]), int64(binary.LittleEndian.Uint32(ch[4:8]))
		seen += 8
		switch id {
		case "data":
			if rate == 0 {
				return 0, fmt.Errorf("%w: data before fmt", errBadWAV)
			}
			return rate, nil
		case "fmt ":
			if size < 16 || size > 64 {
				return 0, fmt.Errorf("%w: fmt size %d", errBadWAV, size)
			}
			buf := make([]byte, size+size%2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return 0, fmt.Errorf("%w: %w", errBadWAV, err)
			}
			format := binary.LittleEndian.Uint16(buf[0:2])
			channels := binary.LittleEndian.Uint16(buf[2:4])
			rate = int(binary.LittleEndian.Uint32(buf[4:8]))
			bits := binary.LittleEndian.Uint16(buf[14:16])
			if format != 1 || channels != 1 || bits != 16 || rate < 1000 || rate > 192000 {
				return 0, fmt.Errorf("%w: format %d, %d channels, %d bits, %d Hz (want PCM16 mono)",
					errBadWAV, format, channels, bits, rate)
			}
			seen += len(buf)
		default:
			if size+int64(seen) > maxHeader {
				return 0, fmt.Errorf("%w: %d bytes before data", errBadWAV, size+int64(seen))
			}
			if _, err := io.CopyN(io.Discard, r, size+size%2); err != nil {
				return 0, fmt.Errorf("%w: %w", errBadWAV, err)
			}
			seen += int(size + size%2)
		}
		if seen > maxHeader {
			return 0, fmt.Errorf("%w: %d bytes before data", errBadWAV, seen)
		}
	}
}
