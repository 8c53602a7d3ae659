package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	pion "github.com/pion/webrtc/v4"

	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/session/telephony"
	"github.com/frontdoorhq/frontdoor/session/webrtc"
)

// mediaSettings are the flags of the telephony (/v1/twilio) and browser
// (/v1/webrtc) endpoints.
type mediaSettings struct {
	twilio telephony.Config
	webrtc webrtc.Config
	ice    string
}

func mediaFlags(fs *flag.FlagSet) *mediaSettings {
	m := &mediaSettings{}
	fs.StringVar(&m.twilio.AuthToken, "twilio-auth-token", "", "Twilio auth token: when set, /v1/twilio requires a valid X-Twilio-Signature (computed over -twilio-public-url)")
	fs.StringVar(&m.twilio.PublicURL, "twilio-public-url", "", "the stream URL exactly as written in the TwiML <Stream url>, e.g. wss://frontdoor.example.com/v1/twilio")
	fs.DurationVar(&m.twilio.StartTimeout, "twilio-start-timeout", 10*time.Second, "how long /v1/twilio waits for the gateway's start message")
	fs.BoolVar(&m.webrtc.LoopbackOnly, "webrtc-loopback-only", false, "/v1/webrtc offers only 127.0.0.1 ICE candidates (single-host use)")
	fs.BoolVar(&m.webrtc.ExcludeLoopback, "webrtc-exclude-loopback", false, "/v1/webrtc leaves out its 127.0.0.1 ICE candidates")
	fs.StringVar(&m.ice, "webrtc-ice-servers", "", "comma-separated STUN/TURN URLs for /v1/webrtc (none: host candidates only)")
	fs.DurationVar(&m.webrtc.ConnectTimeout, "webrtc-connect-timeout", 15*time.Second, "how long /v1/webrtc signalling may take until the events channel opens")
	return m
}

// apply checks the media flags and sets them on cfg.
func (m *mediaSettings) apply(cfg *server.Config) error {
	if m.twilio.AuthToken != "" && !strings.HasPrefix(m.twilio.PublicURL, "wss://") && !strings.HasPrefix(m.twilio.PublicURL, "ws://") {
		return fmt.Errorf("-twilio-auth-token needs -twilio-public-url, the wss:// URL Twilio signs")
	}
	cfg.Twilio = m.twilio
	cfg.WebRTC = m.webrtc
	if m.ice != "" {
		cfg.WebRTC.ICEServers = []pion.ICEServer{{URLs: strings.Split(m.ice, ",")}}
	}
	return nil
}
