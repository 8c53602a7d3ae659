package wav

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	a := &Audio{SampleRate: 8000, Channels: 1, Samples: []int16{0, 1, -1, 32767, -32768}}
	name := filepath.Join(t.TempDir(), "x.wav")
	if err := WriteFile(name, a); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if b.SampleRate != 8000 || b.Channels != 1 || !slices.Equal(a.Samples, b.Samples) {
		t.Fatalf("read back %+v", b)
	}
}

func TestSkipsChunks(t *testing.T) {
	var buf bytes.Buffer
	_ = Encode(&buf, &Audio{SampleRate: 16000, Channels: 1, Samples: make([]int16, 16000)})
	raw := buf.Bytes()
	// Insert an odd-sized LIST chunk (padded) between fmt and data.
	list := []byte("LIST\x03\x00\x00\x00abc\x00")
	withList := slices.Concat(raw[:36], list, raw[36:])
	a, err := Decode(bytes.NewReader(withList))
	if err != nil {
		t.Fatal(err)
	}
	if a.Duration() != time.Second {
		t.Fatalf("Duration = %v", a.Duration())
	}
}

func TestBadInput(t *testing.T) {
	var good bytes.Buffer
	_ = Encode(&good, &Audio{SampleRate: 8000, Channels: 1, Samples: []int16{1, 2}})
	g := good.Bytes()
	huge := slices.Clone(g)
	huge[40], huge[41], huge[42], huge[43] = 0xFF, 0xFF, 0xFF, 0x7F
	eight := slices.Clone(g)
	eight[34] = 8
	for name, b := range map[string][]byte{
		"empty": nil, "not riff": []byte("RIFX0000WAVE"), "8-bit": eight, "huge data": huge,
	} {
		if _, err := Decode(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: decoded", name)
		} else if name != "empty" && !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}
