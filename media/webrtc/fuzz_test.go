package webrtc

import (
	"encoding/json"
	"testing"
)

func FuzzDecodeSignal(f *testing.F) {
	f.Add([]byte(`{"type":"offer","sdp":"v=0"}`))
	f.Add([]byte(`{"type":"candidate","candidate":{"candidate":"candidate:1 1 udp 1 127.0.0.1 5000 typ host","sdpMid":"0","sdpMLineIndex":0}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSignal(data)
		if err != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeSignal(b); err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
	})
}
