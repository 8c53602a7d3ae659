package wav

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the reader: it must not panic or
// allocate beyond MaxDataBytes, and what it reads must write back and read
// again unchanged.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	_ = Encode(&buf, &Audio{SampleRate: 8000, Channels: 1, Samples: []int16{1, -1, 300}})
	f.Add(buf.Bytes())
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEdata\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Encode(&out, a); err != nil {
			t.Fatal(err)
		}
		b, err := Decode(&out)
		if err != nil || b.SampleRate != a.SampleRate || b.Channels != a.Channels || !slices.Equal(a.Samples, b.Samples) {
			t.Fatalf("round trip: %+v -> %+v, %v", a, b, err)
		}
	})
}
