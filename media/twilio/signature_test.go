package twilio

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"
)

// The expected signatures were computed independently with
//
//	echo -n "$URL$PARAMS" | openssl dgst -sha1 -hmac 12345 -binary | base64
func TestSignature(t *testing.T) {
	tests := []struct {
		url    string
		params url.Values
		want   string
	}{
		{"wss://frontdoor.example.test/v1/twilio", nil, "vYWCK552/fAkZhTHxKxOI0hL5ts="},
		{"https://frontdoor.example.test/voice?tenant=acme", url.Values{
			"To": {"+15550199"}, "CallSid": {"CA1234567890ABCDE"}, "From": {"+15550100"},
		}, "UFPJVLLvVwNoE1jMjXDS4szQ0TM="},
	}
	for _, tt := range tests {
		if got := Signature("12345", tt.url, tt.params); got != tt.want {
			t.Errorf("Signature(%s) = %s, want %s", tt.url, got, tt.want)
		}
		if !ValidateSignature("12345", tt.url, tt.params, tt.want) {
			t.Errorf("ValidateSignature(%s) rejected the right signature", tt.url)
		}
		if ValidateSignature("54321", tt.url, tt.params, tt.want) {
			t.Errorf("ValidateSignature(%s) accepted another token", tt.url)
		}
	}
}

func TestValidateRequest(t *testing.T) {
	const public = "wss://frontdoor.example.test/v1/twilio"
	r := httptest.NewRequest("GET", "/v1/twilio", nil)
	if err := ValidateRequest(r, "12345", public); !errors.Is(err, ErrSignature) {
		t.Fatalf("no header: %v", err)
	}
	r.Header.Set("X-Twilio-Signature", "vYWCK552/fAkZhTHxKxOI0hL5ts=")
	if err := ValidateRequest(r, "12345", public); err != nil {
		t.Fatalf("good header: %v", err)
	}
	// The pitfall: rebuilding the URL as https:// breaks validation.
	if err := ValidateRequest(r, "12345", "https://frontdoor.example.test/v1/twilio"); !errors.Is(err, ErrSignature) {
		t.Fatalf("https rebuild accepted: %v", err)
	}
}
