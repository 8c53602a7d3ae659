package sip

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/icholy/digest"
)

func ev(code byte, end bool, dur uint16) []byte {
	return telephoneEvent{Event: code, End: end, Volume: 10, Duration: dur}.append(nil)
}

func TestDTMFDecoder(t *testing.T) {
	type pkt struct {
		ts      uint32
		payload []byte
	}
	tests := []struct {
		name string
		pkts []pkt
		want string
	}{
		{"one press, three ends", []pkt{{100, ev(1, false, 160)}, {100, ev(1, false, 320)}, {100, ev(1, true, 480)}, {100, ev(1, true, 480)}, {100, ev(1, true, 480)}}, "1"},
		{"two presses of the same key", []pkt{{100, ev(5, false, 160)}, {100, ev(5, true, 320)}, {100, ev(5, true, 320)}, {900, ev(5, false, 160)}, {900, ev(5, true, 320)}}, "55"},
		{"ends only (start packets lost)", []pkt{{100, ev(11, true, 800)}, {100, ev(11, true, 800)}}, "#"},
		{"ends lost, next event begins", []pkt{{100, ev(2, false, 160)}, {100, ev(2, false, 320)}, {700, ev(3, false, 160)}, {700, ev(3, true, 320)}}, "23"},
		{"late packet of a reported event", []pkt{{100, ev(4, true, 320)}, {100, ev(4, false, 160)}}, "4"},
		{"star, letters", []pkt{{1, ev(10, true, 1)}, {2, ev(12, true, 1)}, {3, ev(15, true, 1)}}, "*AD"},
		{"flash is no digit", []pkt{{1, ev(16, true, 1)}}, ""},
		{"start without end", []pkt{{1, ev(7, false, 160)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d dtmfDecoder
			var got []rune
			for _, p := range tt.pkts {
				out, err := d.packet(p.ts, p.payload)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, out...)
			}
			if string(got) != tt.want {
				t.Errorf("digits %q, want %q", string(got), tt.want)
			}
		})
	}
	var d dtmfDecoder
	if _, err := d.packet(1, []byte{1, 2}); err == nil {
		t.Error("a 2-byte telephone-event parsed")
	}
}

func TestEventCode(t *testing.T) {
	for _, tt := range []struct {
		d    rune
		code byte
		err  error
	}{{'0', 0, nil}, {'9', 9, nil}, {'*', 10, nil}, {'#', 11, nil}, {'A', 12, nil}, {'d', 15, nil}, {'x', 0, ErrBadDigit}, {'\n', 0, ErrBadDigit}} {
		code, err := eventCode(tt.d)
		if code != tt.code || !errors.Is(err, tt.err) {
			t.Errorf("eventCode(%q) = %d, %v; want %d, %v", tt.d, code, err, tt.code, tt.err)
		}
	}
}

const baresipOffer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" +
	"m=audio 30000 RTP/AVP 0 8 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-15\r\na=ptime:20\r\na=sendrecv\r\n"

func TestParseSDP(t *testing.T) {
	tests := []struct {
		name    string
		sdp     string
		prefer  []Codec
		want    Codec
		addr    string
		eventPT int
		err     error
	}{
		{"baresip offer", baresipOffer, []Codec{PCMU, PCMA}, PCMU, "127.0.0.1:30000", 101, nil},
		{"prefer PCMA", baresipOffer, []Codec{PCMA, PCMU}, PCMA, "127.0.0.1:30000", 101, nil},
		{"static types without rtpmap, media-level address",
			"v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 4000 RTP/AVP 8\r\nc=IN IP4 10.0.0.2\r\n",
			[]Codec{PCMU, PCMA}, PCMA, "10.0.0.2:4000", -1, nil},
		{"dynamic PCMU", strings.Replace(baresipOffer, "RTP/AVP 0 8 101", "RTP/AVP 96", 1) + "a=rtpmap:96 PCMU/8000\r\n",
			[]Codec{PCMU}, Codec{"PCMU", 96}, "127.0.0.1:30000", -1, nil},
		{"opus only", strings.Replace(baresipOffer, "RTP/AVP 0 8 101", "RTP/AVP 111", 1) + "a=rtpmap:111 opus/48000/2\r\n",
			[]Codec{PCMU, PCMA}, Codec{}, "", 0, ErrNoCodec},
		{"video only", "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=video 4000 RTP/AVP 96\r\n",
			nil, Codec{}, "", 0, ErrBadSDP},
		{"secure RTP only", strings.Replace(baresipOffer, "RTP/AVP", "RTP/SAVP", 1), nil, Codec{}, "", 0, ErrBadSDP},
		{"no address", "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n", nil, Codec{}, "", 0, ErrBadSDP},
		{"host name address", strings.ReplaceAll(baresipOffer, "IN IP4 127.0.0.1", "IN IP4 pbx.example"), nil, Codec{}, "", 0, ErrBadSDP},
		{"garbage", "hello", nil, Codec{}, "", 0, ErrBadSDP},
		{"empty", "", nil, Codec{}, "", 0, ErrNoOffer},
		{"oversize", baresipOffer + strings.Repeat("a=x\r\n", maxSDP/5), nil, Codec{}, "", 0, ErrBadSDP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseSDP([]byte(tt.sdp))
			var c Codec
			if err == nil {
				c, err = o.choose(tt.prefer)
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if c != tt.want || o.Addr.String() != tt.addr || o.EventPT != tt.eventPT {
				t.Errorf("got %v %v event %d, want %v %v event %d", c, o.Addr, o.EventPT, tt.want, tt.addr, tt.eventPT)
			}
		})
	}
}

// TestDescribeRoundTrip: the answer this package writes is one it reads.
func TestDescribeRoundTrip(t *testing.T) {
	o, err := parseSDP([]byte(baresipOffer))
	if err != nil {
		t.Fatal(err)
	}
	ans, err := parseSDP(describe(7, o.Addr, []Codec{PCMA}, 101))
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := ans.choose([]Codec{PCMU, PCMA}); c != PCMA || ans.EventPT != 101 || ans.Addr != o.Addr || ans.PtimeMS != 20 {
		t.Errorf("answer read back as %+v", ans)
	}
}

// fakeClock is the clock nonces are issued and checked on.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestDigest(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	a, err := newAuthenticator(&Auth{Realm: "frontdoor", Users: map[string]User{"alice": {Password: "secret", Tenant: "acme"}}, NonceTTL: time.Minute}, clock.now, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(user, pass string, chal string, mutate func(*digest.Credentials)) string {
		c, err := digest.ParseChallenge(chal)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := digest.Digest(c, digest.Options{Method: "INVITE", URI: "sip:acme@127.0.0.1", Username: user, Password: pass, Count: 1})
		if err != nil {
			t.Fatal(err)
		}
		if mutate != nil {
			mutate(cr)
		}
		return cr.String()
	}
	// Each case answers a challenge of its own: an answer is taken once.
	fresh := func() string { return a.challenge(false) }
	tests := []struct {
		name   string
		header string
		age    time.Duration
		err    error
	}{
		{"right password", answer("alice", "secret", fresh(), nil), 0, nil},
		{"no qop (RFC 2069)", answer("alice", "secret", strings.Replace(fresh(), `qop="auth", `, "", 1), nil), 0, nil},
		{"wrong password", answer("alice", "guess", fresh(), nil), 0, errBadResponse},
		{"unknown user", answer("mallory", "secret", fresh(), nil), 0, errUnknownUser},
		{"other realm", answer("alice", "secret", fresh(), func(c *digest.Credentials) { c.Realm = "elsewhere" }), 0, errBadResponse},
		{"forged nonce", answer("alice", "secret", fresh(), func(c *digest.Credentials) { c.Nonce = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }), 0, errBadNonce},
		{"stale nonce", answer("alice", "secret", fresh(), nil), 2 * time.Minute, errStaleNonce},
		{"no header", "", 0, errNoCredentials},
		{"not digest", "Basic YWxpY2U6c2VjcmV0", 0, errBadResponse},
		{"oversize", "Digest username=\"" + strings.Repeat("a", 5000) + "\"", 0, errBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock.t = clock.t.Add(tt.age)
			defer func() { clock.t = clock.t.Add(-tt.age) }()
			user, entry, err := a.verify(tt.header, "INVITE")
			if !errors.Is(err, tt.err) {
				t.Fatalf("verify: %v, want %v", err, tt.err)
			}
			if err == nil && (user != "alice" || entry.Tenant != "acme") {
				t.Errorf("verified as %q tenant %q", user, entry.Tenant)
			}
		})
	}
	if _, _, err := a.verify(answer("alice", "secret", fresh(), nil), "BYE"); !errors.Is(err, errBadResponse) {
		t.Errorf("an INVITE's answer accepted for BYE: %v", err)
	}
	if _, err := newAuthenticator(&Auth{Realm: `a"b`}, clock.now, 1); !errors.Is(err, ErrConfig) {
		t.Errorf("a realm with a quote: %v, want ErrConfig", err)
	}
}

// TestDigestReplay: an answer is taken once. With qop=auth the same nonce
// may be answered again with a growing nc (RFC 7616 section 3.3); without
// qop a nonce is used once. When more nonces are remembered than the
// bound, the oldest are forgotten and everything issued up to them is
// stale, never accepted again.
func TestDigestReplay(t *testing.T) {
	type use struct {
		chal  int   // which challenge is answered
		nc    int   // 0: no qop
		again bool  // send the previous header again instead
		want  error // of verify
	}
	tests := []struct {
		name      string
		maxNonces int
		uses      []use
	}{
		{"the same header twice", 10, []use{{0, 1, false, nil}, {0, 1, true, errReplay}}},
		{"a growing nc", 10, []use{{0, 1, false, nil}, {0, 2, false, nil}, {0, 7, false, nil}}},
		{"an nc that steps back", 10, []use{{0, 2, false, nil}, {0, 1, false, errReplay}, {0, 2, false, errReplay}}},
		{"no qop twice", 10, []use{{0, 0, false, nil}, {0, 0, false, errReplay}}},
		{"two challenges", 10, []use{{0, 1, false, nil}, {1, 1, false, nil}, {0, 1, false, errReplay}}},
		{"over the bound", 2, []use{{0, 1, false, nil}, {1, 1, false, nil}, {2, 1, false, nil}, {0, 2, false, errStaleNonce}, {2, 2, false, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			a, err := newAuthenticator(&Auth{Realm: "frontdoor", Users: map[string]User{"alice": {Password: "secret"}}}, clock.now, tt.maxNonces)
			if err != nil {
				t.Fatal(err)
			}
			var chals []string
			var last string
			for i, u := range tt.uses {
				for len(chals) <= u.chal {
					clock.t = clock.t.Add(time.Second) // nonces issued in order
					chals = append(chals, a.challenge(false))
				}
				h := last
				if !u.again {
					c, err := digest.ParseChallenge(chals[u.chal])
					if err != nil {
						t.Fatal(err)
					}
					if u.nc == 0 {
						c.QOP = nil
					}
					cr, err := digest.Digest(c, digest.Options{Method: "INVITE", URI: "sip:acme@127.0.0.1", Username: "alice", Password: "secret", Count: max(u.nc, 1)})
					if err != nil {
						t.Fatal(err)
					}
					h = cr.String()
				}
				last = h
				if _, _, err := a.verify(h, "INVITE"); !errors.Is(err, u.want) {
					t.Fatalf("use %d: %v, want %v", i, err, u.want)
				}
			}
		})
	}
}
