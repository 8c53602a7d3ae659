package wire

import (
	"encoding/json"
	"testing"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/claim"
)

// TestMessageJSON pins every server message's JSON byte for byte. The
// wanted strings were produced by the message types before they moved
// here from package session (main at fce718e); the engine's marks (an
// armed Barrier, a premise) never reach the JSON.
func TestMessageJSON(t *testing.T) {
	armed := func(b *Barrier) { b.Arm(true) }
	errMsg := &ErrorMsg{Type: "error", Code: CodeBadField, Message: "turn.id"}
	armed(&errMsg.Barrier)
	offer := &OfferMsg{Type: "offer", Kinds: []prompt.Kind{prompt.KindCallback, prompt.KindHandoff}}
	armed(&offer.Barrier)
	fb := &FallbackMsg{Type: "callback", Disposition: stages.Queued, Ref: "cb-1", Agent: "ann", Position: 3}
	fb.Arm(false)
	pm := &PromptMsg{Type: "prompt", Reason: "overloaded", Stage: "model", Text: "Sorry."}
	pm.SetPremise(7)
	for i, tc := range []struct {
		msg  Message
		want string
	}{
		{&SessionMsg{Type: "session", Disposition: stages.Queued, Session: "s1", Position: 2},
			`{"type":"session","disposition":"queued","session":"s1","position":2}`},
		{&SessionMsg{Type: "session", Disposition: stages.Admitted, Session: "s1"},
			`{"type":"session","disposition":"admitted","session":"s1"}`},
		{&DispositionMsg{Type: "disposition", Stage: "synthesis", Turn: "t1", Generation: 3, Segment: 2, Disposition: stages.Queued, Position: 1, Error: "timeout"},
			`{"type":"disposition","stage":"synthesis","turn":"t1","generation":3,"segment":2,"disposition":"queued","position":1,"error":"timeout"}`},
		{&DispositionMsg{Type: "disposition", Stage: "model", Turn: "t1", Disposition: claim.Active},
			`{"type":"disposition","stage":"model","turn":"t1","generation":0,"disposition":"active"}`},
		{&TextMsg{Type: "text", Turn: "t1", Generation: 1, Delta: "hé \"x\" <b>"},
			`{"type":"text","turn":"t1","generation":1,"delta":"hé \"x\" \u003cb\u003e"}`},
		{&AudioStartMsg{Type: "audio_start", Turn: "t1", Generation: 1, Encoding: "pcm16", Rate: 16000},
			`{"type":"audio_start","turn":"t1","generation":1,"encoding":"pcm16","rate":16000}`},
		{&AudioEndMsg{Type: "audio_end", Turn: "prompt", AudioMS: 1200, Cut: true},
			`{"type":"audio_end","turn":"prompt","generation":0,"audio_ms":1200,"cut":true}`},
		{&AudioEndMsg{Type: "audio_end", Turn: "t1", Generation: 2, AudioMS: 20},
			`{"type":"audio_end","turn":"t1","generation":2,"audio_ms":20}`},
		{&TranscriptMsg{Type: "transcript", Turn: "t2", Generation: 4, Text: "call me back"},
			`{"type":"transcript","turn":"t2","generation":4,"text":"call me back"}`},
		{&TurnEndMsg{Type: "turn_end", Turn: "t1", Generation: 1, Disposition: TurnFailed, Stage: "model", Error: "overloaded"},
			`{"type":"turn_end","turn":"t1","generation":1,"disposition":"failed","stage":"model","error":"overloaded"}`},
		{&TurnEndMsg{Type: "turn_end", Turn: "t1", Generation: 1, Disposition: "completed"},
			`{"type":"turn_end","turn":"t1","generation":1,"disposition":"completed"}`},
		{&InterruptedMsg{Type: "interrupted", Generation: 2, Cancelled: []string{"t1", "t2"}, Heard: &Heard{Turn: "t1", AudioMS: 340, Text: "Hello th"}},
			`{"type":"interrupted","generation":2,"cancelled":["t1","t2"],"heard":{"turn":"t1","audio_ms":340,"text":"Hello th"}}`},
		{&InterruptedMsg{Type: "interrupted", Generation: 2},
			`{"type":"interrupted","generation":2,"cancelled":null}`},
		{pm, `{"type":"prompt","reason":"overloaded","stage":"model","text":"Sorry."}`},
		{errMsg, `{"type":"error","code":"bad_field","message":"turn.id"}`},
		{offer, `{"type":"offer","kinds":["callback","handoff"]}`},
		{&OfferMsg{Type: "offer"}, `{"type":"offer","kinds":null}`},
		{fb, `{"type":"callback","disposition":"queued","ticket":"cb-1","agent":"ann","position":3}`},
		{&FallbackMsg{Type: "handoff", Disposition: stages.Expired},
			`{"type":"handoff","disposition":"expired"}`},
	} {
		b, err := json.Marshal(tc.msg)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if string(b) != tc.want {
			t.Errorf("%d: %T\n got %s\nwant %s", i, tc.msg, b, tc.want)
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestBarrier: a message no call queued, or one queued behind no audio,
// has nothing to wait for; one queued behind audio waits until the queue
// closes the channel Arm gave it.
func TestBarrier(t *testing.T) {
	var b Barrier
	if !isClosed(b.AudioBefore()) {
		t.Fatal("the zero Barrier waits")
	}
	if ch := b.Arm(false); ch != nil || !isClosed(b.AudioBefore()) {
		t.Fatalf("armed with nothing pending: channel %v, closed %v", ch, isClosed(b.AudioBefore()))
	}
	ch := b.Arm(true)
	if ch == nil || isClosed(b.AudioBefore()) {
		t.Fatal("armed with audio pending: not waiting")
	}
	close(ch)
	if !isClosed(b.AudioBefore()) {
		t.Fatal("still waiting once the queue closed the channel")
	}
	var s Stamp
	if s.Premise() != 0 {
		t.Fatal("a premise before queueing")
	}
	s.SetPremise(3)
	if s.Premise() != 3 {
		t.Fatalf("premise %d, want 3", s.Premise())
	}
}
