package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
)

// TestGatewayHandshakes: every media route, behind the guard, upgrades
// when dialled exactly as its provider's documentation shows (the
// subprotocols the provider's client offers, and its credentials where
// the provider can send them), and answers the provider's own
// subprotocol. No gateway is asked for frontdoor.v1 or a token
// subprotocol it cannot send.
func TestGatewayHandshakes(t *testing.T) {
	model, synth := stub.NewModel(stub.Settings{}), stub.NewSynthesizer(stub.Settings{})
	defer model.Close()
	defer synth.Close()
	srv, err := server.New(server.Config{Config: session.Config{ModelBackend: model, Synthesizer: synth}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(New(Config{}).Handler(srv.Handler(), Public))
	defer hs.Close()
	basic := http.Header{"Authorization": {"Basic dXNlcjpzZWNyZXQ="}} // user:secret

	for _, tc := range []struct {
		name, path string
		protocols  []string
		header     http.Header
		answer     string // the subprotocol the server must answer
		refused    int    // the handshake's expected refusal (0: 101)
	}{
		// Twilio <Connect><Stream> and Telnyx streaming_start offer no
		// subprotocol; Twilio signs the upgrade (X-Twilio-Signature).
		{name: "twilio", path: "/v1/twilio", header: http.Header{"X-Twilio-Signature": {"c2lnbmF0dXJl"}}},
		{name: "telnyx", path: "/v1/twilio"},
		// Plivo <Stream bidirectional="true">, Exotel's Voicebot applet,
		// Vonage's websocket endpoint in an NCCO connect action: none.
		{name: "plivo", path: "/v1/plivo"},
		{name: "exotel", path: "/v1/exotel?sample-rate=8000"},
		{name: "vonage", path: "/v1/vonage"},
		// Asterisk's websocket_client.conf with protocols = media, as
		// Asterisk's chan_websocket page shows, and with the username and
		// password it sends as Basic authentication; and without protocols.
		{name: "asterisk media", path: "/v1/asterisk", protocols: []string{"media"}, header: basic, answer: "media"},
		{name: "asterisk json", path: "/v1/asterisk?control=json", protocols: []string{"media"}, answer: "media"},
		{name: "asterisk none", path: "/v1/asterisk"},
		// FreeSWITCH mod_audio_stream offers none; jambonz's
		// mod_audio_fork offers audio.drachtio.org (lws_glue.cpp), with
		// MOD_AUDIO_BASIC_AUTH_USERNAME/_PASSWORD as Basic authentication.
		{name: "freeswitch audio_stream", path: "/v1/freeswitch"},
		{name: "freeswitch audio_fork", path: "/v1/freeswitch?rate=16000", protocols: []string{"audio.drachtio.org"}, header: basic, answer: "audio.drachtio.org"},
		// jambonz's listen verb offers only audio.jambonz.org, with the
		// wsAuth username and password as Basic authentication.
		{name: "jambonz", path: "/v1/jambonz", protocols: []string{"audio.jambonz.org"}, header: basic, answer: "audio.jambonz.org"},
		// A subprotocol the route does not speak is refused with a clear
		// 400, and a gateway route does not take the browsers' protocols.
		{name: "jambonz foreign", path: "/v1/jambonz", protocols: []string{"chat"}, refused: http.StatusBadRequest},
		{name: "plivo browser protocol", path: "/v1/plivo", protocols: []string{ProtocolV1}, refused: http.StatusBadRequest},
		{name: "native", path: "/v1/session", protocols: []string{ProtocolV1}, answer: ProtocolV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			url := "ws" + strings.TrimPrefix(hs.URL, "http") + tc.path
			c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: tc.protocols, HTTPHeader: tc.header})
			if tc.refused != 0 {
				if err == nil {
					c.CloseNow()
					t.Fatalf("upgrade accepted, want %d", tc.refused)
				}
				if resp == nil || resp.StatusCode != tc.refused {
					t.Fatalf("refusal %v, want %d", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("upgrade refused: %v", err)
			}
			defer c.CloseNow()
			if resp.StatusCode != http.StatusSwitchingProtocols || c.Subprotocol() != tc.answer {
				t.Fatalf("answered %d with subprotocol %q, want 101 with %q", resp.StatusCode, c.Subprotocol(), tc.answer)
			}
			_ = c.Close(websocket.StatusNormalClosure, "")
		})
	}
	http.DefaultClient.CloseIdleConnections()
}
