package twilio

import "testing"

func BenchmarkDecodeMedia(b *testing.B) {
	msg := []byte(EncodeOutbound(Twilio, Outbound{Event: EventMedia, StreamSID: "MZ00000000000000000000000000000002", Payload: make([]byte, 160)}))
	in := []byte(`{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"` +
		string(msg[len(`{"event":"media","streamSid":"MZ00000000000000000000000000000002","media":{"payload":"`):len(msg)-3]) +
		`"},"streamSid":"MZ00000000000000000000000000000002"}`)
	if _, err := Decode(Twilio, in); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		_, _ = Decode(Twilio, in)
	}
}

func BenchmarkEncodeMedia(b *testing.B) {
	o := Outbound{Event: EventMedia, StreamSID: "MZ00000000000000000000000000000002", Payload: make([]byte, 160)}
	b.SetBytes(160)
	for b.Loop() {
		_ = EncodeOutbound(Twilio, o)
	}
}
