package twilio

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// ErrSignature reports a missing or wrong X-Twilio-Signature.
var ErrSignature = errors.New("twilio: bad X-Twilio-Signature")

// Signature computes Twilio's request signature: base64 of HMAC-SHA1, keyed
// with the account's auth token, over the full URL Twilio requested followed
// by each POST parameter's name and value in name order (none for a
// WebSocket upgrade). For Media Streams the URL is the wss:// one from the
// <Stream url>, not an https:// rebuild of it.
func Signature(authToken, fullURL string, params url.Values) string {
	var b strings.Builder
	b.WriteString(fullURL)
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals := append([]string(nil), params[k]...)
		sort.Strings(vals)
		for _, v := range vals {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ValidateSignature reports whether signature is Twilio's for the URL and params.
func ValidateSignature(authToken, fullURL string, params url.Values, signature string) bool {
	want := Signature(authToken, fullURL, params)
	return hmac.Equal([]byte(want), []byte(signature))
}

// ValidateRequest checks the X-Twilio-Signature of a WebSocket upgrade
// request. publicURL is the wss:// URL exactly as configured in TwiML (the
// server cannot rebuild it reliably behind proxies).
func ValidateRequest(r *http.Request, authToken, publicURL string) error {
	sig := r.Header.Get("X-Twilio-Signature")
	if sig == "" || !ValidateSignature(authToken, publicURL, nil, sig) {
		return ErrSignature
	}
	return nil
}
