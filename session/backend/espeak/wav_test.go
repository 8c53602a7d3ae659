package espeak

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func header(format, channels uint16, rate uint32, bits uint16, extra []byte) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF\x24\xf0\xff\x7fWAVE")
	if extra != nil {
		b.WriteString("LIST")
		_ = binary.Write(&b, binary.LittleEndian, uint32(len(extra)))
		b.Write(extra)
	}
	b.WriteString("fmt \x10\x00\x00\x00")
	for _, v := range []any{format, channels, rate, rate * 2, uint16(2), bits} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data\x00\xf0\xff\x7f")
	return b.Bytes()
}

func TestReadWAVHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		rate int
	}{
		{"espeak", header(1, 1, 22050, 16, nil), 22050},
		{"with list chunk", header(1, 1, 16000, 16, []byte("abcd")), 16000},
		{"stereo", header(1, 2, 22050, 16, nil), 0},
		{"float", header(3, 1, 22050, 32, nil), 0},
		{"8 bit", header(1, 1, 22050, 8, nil), 0},
		{"huge chunk", header(1, 1, 22050, 16, make([]byte, 5000)), 0},
		{"truncated", header(1, 1, 22050, 16, nil)[:20], 0},
		{"not riff", []byte("hello world, this is text"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rate, err := readWAVHeader(bytes.NewReader(tc.in))
			if tc.rate == 0 {
				if !errors.Is(err, errBadWAV) {
					t.Fatalf("accepted: rate %d err %v", rate, err)
				}
				return
			}
			if err != nil || rate != tc.rate {
				t.Fatalf("rate %d err %v", rate, err)
			}
		})
	}
}

func FuzzReadWAVHeader(f *testing.F) {
	f.Add(header(1, 1, 22050, 16, nil))
	f.Add(header(1, 1, 8000, 16, []byte("xy")))
	f.Fuzz(func(t *testing.T, b []byte) {
		rate, err := readWAVHeader(bytes.NewReader(b))
		if err == nil && (rate < 1000 || rate > 192000) {
			t.Fatalf("rate %d accepted", rate)
		}
	})
}
