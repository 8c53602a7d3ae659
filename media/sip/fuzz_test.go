package sip

import (
	"encoding/binary"
	"testing"
	"time"
)

func FuzzParseSDP(f *testing.F) {
	f.Add([]byte(baresipOffer))
	f.Add([]byte("v=0\r\nm=audio 1 RTP/AVP 0\r\nc=IN IP4 ::1\r\n"))
	f.Add([]byte("v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nt=0 0\r\nm=audio 0 RTP/AVP 0\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := parseSDP(b)
		if err != nil {
			return
		}
		if !o.Addr.IsValid() || o.Addr.Port() == 0 || o.EventPT < -1 || o.EventPT > 127 {
			t.Fatalf("accepted %+v", o)
		}
		for _, c := range o.Codecs {
			if c.PayloadType > 127 || (c.Name != "PCMU" && c.Name != "PCMA") {
				t.Fatalf("codec %+v", c)
			}
		}
	})
}

// FuzzDTMF feeds packets (4 bytes of timestamp, then the payload, 8 bytes
// each): never more digits than events (distinct timestamps).
func FuzzDTMF(f *testing.F) {
	seed := func(ts uint32, p []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, ts), p...) }
	f.Add(append(seed(1, ev(1, false, 160)), seed(1, ev(1, true, 320))...))
	f.Add(append(seed(1, ev(2, false, 160)), seed(9, ev(3, true, 320))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d dtmfDecoder
		events := map[uint32]bool{}
		n := 0
		for len(b) >= 8 {
			ts := binary.BigEndian.Uint32(b)
			events[ts] = true
			out, _ := d.packet(ts, b[4:8])
			n += len(out)
			b = b[8:]
		}
		if n > len(events) {
			t.Fatalf("%d digits from %d events", n, len(events))
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add(`Digest username="alice", realm="frontdoor", nonce="x", uri="sip:a@b", response="00", qop=auth, nc=00000001, cnonce="c"`)
	f.Add("Digest ")
	f.Add(`Digest nc=zz`)
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	a, err := newAuthenticator(&Auth{Realm: "frontdoor", Users: map[string]User{"alice": {Password: "secret"}}}, clock.now, 1<<16)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if user, _, err := a.verify(h, "INVITE"); err == nil {
			t.Fatalf("forged credentials accepted for %q", user)
		}
	})
}
