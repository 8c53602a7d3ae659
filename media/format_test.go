package media

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		f       Format
		bytes20 int
		dur160  time.Duration
		valid   bool
	}{
		{Telephony, 160, 20 * time.Millisecond, true},
		{Format{PCM16, 16000, 1}, 640, 5 * time.Millisecond, true},
		{Format{PCM16, 48000, 2}, 3840, 833333 * time.Nanosecond, true}, // 160 bytes = 40 stereo frames
		{Format{"opus", 48000, 1}, 0, 0, false},
	}
	for _, tt := range tests {
		if err := tt.f.Validate(); (err == nil) != tt.valid {
			t.Errorf("%v Validate() = %v, want valid=%v", tt.f, err, tt.valid)
		}
		if !tt.valid {
			continue
		}
		if got := tt.f.BytesPer(FrameDuration); got != tt.bytes20 {
			t.Errorf("%v BytesPer(20ms) = %d, want %d", tt.f, got, tt.bytes20)
		}
		if got := tt.f.Duration(160); got != tt.dur160 {
			t.Errorf("%v Duration(160) = %v, want %v", tt.f, got, tt.dur160)
		}
	}
}
