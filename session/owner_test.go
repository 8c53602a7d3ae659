package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/internal/memline"
	"github.com/frontdoorhq/frontdoor/session/internal/sessiontest"
	"github.com/frontdoorhq/frontdoor/session/wire"
	"github.com/frontdoorhq/frontdoor/stages"
)

// The call's owner (owner.go) in memory and in fake time: a call on a
// memline, driven through its reader, with events also posted straight to
// the owner as the reader's voice detection would post them.

// MemEngine is an engine on stub backends, with the rig's limits, that
// calls reach through memline: no socket, so that a test can run it in a
// synctest bubble. It is closed when the test ends. (Exported for the
// package's black-box tests: mem_test.go.)
func MemEngine(t *testing.T, mod func(*Config, *stub.Settings)) (*Engine, *stub.Synthesizer) {
	t.Helper()
	cfg := Config{Session: sessiontest.Calls, Model: sessiontest.Turns, Synthesis: sessiontest.Turns,
		CleanupTimeout: sessiontest.CleanupTimeout, QueueUpdate: sessiontest.QueueUpdate}
	st := sessiontest.Settings()
	if mod != nil {
		mod(&cfg, &st)
	}
	m, s := stub.NewModel(st), stub.NewSynthesizer(st)
	cfg.ModelBackend, cfg.Synthesizer = m, s
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		m.Close()
		s.Close()
	})
	return e, s
}

// ownerEngine is MemEngine with replies of 100 ms (20 frames 5 ms apart),
// so that a step can find a turn speaking.
func ownerEngine(t *testing.T, mod func(*Config, *stub.Settings)) *Engine {
	e, _ := MemEngine(t, func(c *Config, s *stub.Settings) {
		s.FrameCount, s.FrameDelay = 20, 5*time.Millisecond
		if mod != nil {
			mod(c, s)
		}
	})
	return e
}

// ownerCall starts a call on a new line and returns it, its line and
// everything it sent until it was admitted (or told it waits).
func ownerCall(t *testing.T, e *Engine) (*Call, *memline.Line, []sessiontest.Msg) {
	t.Helper()
	l := memline.New()
	t.Cleanup(func() { l.Close(wire.CloseNormal, "") })
	if !e.Start(context.Background(), l, Capabilities{Name: "memory"}, nil) {
		t.Fatal("the engine refused to start a call")
	}
	got := l.Until(t, sessiontest.IsType("session"))
	e.mu.Lock()
	defer e.mu.Unlock()
	for c := range e.calls {
		if c.t == l {
			return c, l, got
		}
	}
	t.Fatal("the call is not in the engine's calls")
	return nil, nil, nil
}

// sent is every message the line holds now, without waiting.
func sent(l *memline.Line) []sessiontest.Msg {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got []sessiontest.Msg
	for {
		m, ok := l.Next(ctx)
		if !ok {
			return got
		}
		got = append(got, m)
	}
}

// brief is m as the table below names it, or "" for a message it leaves
// out (dispositions, text, audio).
func brief(m sessiontest.Msg) string {
	switch m.Type {
	case "turn_end":
		return "turn_end " + m.Turn + " " + m.Disposition
	case "interrupted":
		return fmt.Sprintf("interrupted %d %s", m.Generation, strings.Join(m.Cancelled, ","))
	case "error":
		return "error " + m.Code
	}
	return ""
}

// ownerStep is one step of a sequence: a client message through the
// reader, an event posted to the owner, or fake time passing. Each is
// followed by synctest.Wait: every goroutine of the call has settled.
type ownerStep struct {
	say  string
	post eventKind
	wait time.Duration
}

func turnMsg(id string) ownerStep {
	return ownerStep{say: `{"type":"turn","id":"` + id + `","text":"hello there"}`}
}

var bargeMsg = ownerStep{say: `{"type":"barge_in"}`}

func TestOwnerSequences(t *testing.T) {
	settle := ownerStep{wait: 2 * time.Second}
	speaking := ownerStep{wait: 50 * time.Millisecond} // t1's reply is being spoken
	for _, tc := range []struct {
		name  string
		mod   func(*Config, *stub.Settings)
		steps []ownerStep
		want  []string
	}{{
		name:  "turns run one at a time in order",
		steps: []ownerStep{turnMsg("t1"), turnMsg("t2"), turnMsg("t3"), settle},
		want:  []string{"turn_end t1 completed", "turn_end t2 completed", "turn_end t3 completed"},
	}, {
		name:  "a barge-in ends the speaking and every pending turn at once",
		steps: []ownerStep{turnMsg("t1"), turnMsg("t2"), turnMsg("t3"), speaking, bargeMsg, settle},
		want: []string{"interrupted 2 t1,t2,t3", "turn_end t2 cancelled", "turn_end t3 cancelled",
			"turn_end t1 cancelled"},
	}, {
		name:  "the caller's voice barges in on a speaking turn",
		steps: []ownerStep{turnMsg("t1"), speaking, {post: evVoice}, turnMsg("t2"), settle},
		want:  []string{"interrupted 2 t1", "turn_end t1 cancelled", "turn_end t2 completed"},
	}, {
		name:  "the caller's voice with no turn running barges in on nothing",
		steps: []ownerStep{{post: evVoice}, turnMsg("t1"), settle, {post: evVoice}, settle},
		want:  []string{"turn_end t1 completed"},
	}, {
		name:  "a barge-in with nothing running still advances the generation",
		steps: []ownerStep{bargeMsg, turnMsg("t1"), settle},
		want:  []string{"interrupted 2 ", "turn_end t1 completed"},
	}, {
		name:  "an id in flight is refused, and free again once its turn ended",
		steps: []ownerStep{turnMsg("t1"), turnMsg("t1"), settle, turnMsg("t1"), settle},
		want:  []string{"error " + wire.CodeDuplicate, "turn_end t1 completed", "turn_end t1 completed"},
	}, {
		name:  "turns in flight are bounded",
		mod:   func(c *Config, _ *stub.Settings) { c.MaxTurnsInFlight = 2 },
		steps: []ownerStep{turnMsg("t1"), turnMsg("t2"), turnMsg("t3"), settle},
		want:  []string{"error " + wire.CodeTooManyTurns, "turn_end t1 completed", "turn_end t2 completed"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := ownerEngine(t, tc.mod)
				c, l, before := ownerCall(t, e)
				for _, st := range tc.steps {
					switch {
					case st.say != "":
						_ = l.Say(t, st.say)
					case st.post != 0:
						c.post(event{kind: st.post, at: e.cfg.Clock.Now()})
					default:
						time.Sleep(st.wait)
					}
					synctest.Wait()
				}
				log := append(before, sent(l)...)
				var got []string
				for _, m := range log {
					if b := brief(m); b != "" {
						got = append(got, b)
					}
				}
				if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
					t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
				}
				checkOwnerLog(t, log)
			})
		})
	}
}

// checkOwnerLog checks what the owner promises, on everything a call
// sent: no turn's work before the session was admitted; within a
// generation, turns start (their first disposition) one at a time and in
// the order sent (ids t<n>, n increasing); no turn of an older generation
// starts, or speaks, after `interrupted`; every turn ends once.
func checkOwnerLog(t *testing.T, log []sessiontest.Msg) {
	t.Helper()
	admitted, gen := false, uint64(1)
	running := map[uint64]string{} // by generation
	last := map[uint64]int{}       // the number of the last turn started, by generation
	started, ended := map[string]bool{}, map[string]int{}
	for i, m := range log {
		switch m.Type {
		case "session":
			admitted = admitted || m.Disposition == "admitted"
		case "interrupted":
			gen = m.Generation
		case "disposition":
			if !admitted {
				t.Fatalf("message %d: %s's work before the session was admitted", i, m.Turn)
			}
			if started[m.Turn] {
				continue
			}
			started[m.Turn] = true
			if m.Generation < gen {
				t.Fatalf("message %d: %s of generation %d started after interrupted %d", i, m.Turn, m.Generation, gen)
			}
			if r, ok := running[m.Generation]; ok {
				t.Fatalf("message %d: %s started while %s runs", i, m.Turn, r)
			}
			running[m.Generation] = m.Turn
			n, _ := strconv.Atoi(strings.TrimPrefix(m.Turn, "t"))
			if n < last[m.Generation] { // (equal: an id used again once free)
				t.Fatalf("message %d: %s started after t%d", i, m.Turn, last[m.Generation])
			}
			last[m.Generation] = n
		case "turn_end":
			ended[m.Turn]++
			if running[m.Generation] == m.Turn {
				delete(running, m.Generation)
				delete(started, m.Turn) // (its id may come again)
			}
		case "text", "audio_start", "audio_end":
			if m.Generation < gen {
				t.Fatalf("message %d: %s of generation %d after interrupted %d", i, m.Type, m.Generation, gen)
			}
		}
	}
	for id := range started {
		if ended[id] == 0 {
			t.Errorf("%s started and never ended", id)
		}
	}
}

// TestOwnerNoTurnBeforeAdmission: a call waiting for its session slot is
// told its turns are not admitted, its barge-in changes nothing, and once
// admitted (the admission goroutine's event) its turns run.
func TestOwnerNoTurnBeforeAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := ownerEngine(t, func(c *Config, _ *stub.Settings) {
			c.Session = stages.Limits{Slots: 1, Waiting: 1, MaxAge: 5 * time.Second}
		})
		_, first, _ := ownerCall(t, e)
		c, l, got := ownerCall(t, e)
		if d := got[len(got)-1].Disposition; d != "queued" {
			t.Fatalf("second call %q, want queued", d)
		}
		_ = l.Say(t, `{"type":"turn","id":"t1","text":"too early"}`)
		_ = l.Say(t, `{"type":"barge_in"}`)
		synctest.Wait()
		if c.gen.Load() != 1 {
			t.Fatalf("generation %d after a barge-in before admission, want 1", c.gen.Load())
		}
		first.Close(wire.CloseNormal, "") // the slot frees
		got = append(got, l.Until(t, func(m sessiontest.Msg) bool { return m.Type == "session" && m.Disposition == "admitted" })...)
		_ = l.Say(t, `{"type":"turn","id":"t2","text":"now"}`)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		log := append(got, sent(l)...)
		checkOwnerLog(t, log)
		var briefs []string
		for _, m := range log {
			if b := brief(m); b != "" {
				briefs = append(briefs, b)
			}
		}
		if want := "error " + wire.CodeNotAdmitted + "|turn_end t2 completed"; strings.Join(briefs, "|") != want {
			t.Fatalf("got %q, want %q", strings.Join(briefs, "|"), want)
		}
	})
}

// TestOwnerStopsTurns: once the call stops, nothing starts: turns still
// pending never reach a stage, and the owner's goroutine is gone.
func TestOwnerStopsTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := ownerEngine(t, nil)
		c, l, _ := ownerCall(t, e)
		for _, id := range []string{"t1", "t2", "t3"} {
			_ = l.Say(t, `{"type":"turn","id":"`+id+`","text":"hello there"}`)
		}
		_ = l.Say(t, `{"type":"hangup"}`)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if s, _ := e.Stages().Stage(StageModel); s.Ledger.Offered > 1 {
			t.Fatalf("model stage offered %d turns after a hangup behind the first, want at most 1", s.Ledger.Offered)
		}
		c.box.mu.Lock()
		defer c.box.mu.Unlock()
		if !c.box.closed || c.box.running || len(c.box.q) != 0 {
			t.Fatalf("mailbox closed %v, running %v, %d queued after the end", c.box.closed, c.box.running, len(c.box.q))
		}
		if c.o.phase != phaseEnded || len(c.o.pending) != 0 || c.o.speaking != nil {
			t.Fatalf("after the end: phase %d, %d pending, speaking %v", c.o.phase, len(c.o.pending), c.o.speaking != nil)
		}
	})
}

// TestOwnerConcurrentEvents: the reader (turns), other goroutines (the
// caller's voice and barge-ins, as the reader's voice detection and a
// second source would post them) and the turns' goroutines all post at
// once; the owner's promises hold on everything the call sent, and every
// turn accepted ends exactly once.
func TestOwnerConcurrentEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := ownerEngine(t, func(c *Config, s *stub.Settings) {
			c.MaxTurnsInFlight = 4
			s.FrameCount = 10
		})
		c, l, before := ownerCall(t, e)
		const turns = 40
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 1; i <= turns; i++ {
				_ = l.Say(t, `{"type":"turn","id":"t`+strconv.Itoa(i)+`","text":"hello there"}`)
				time.Sleep(time.Duration(i%4) * 15 * time.Millisecond)
			}
		})
		for k := range 2 {
			wg.Go(func() {
				for i := range 10 {
					time.Sleep(time.Duration(37+11*k+i) * time.Millisecond)
					if (i+k)%2 == 0 {
						c.post(event{kind: evVoice, at: e.cfg.Clock.Now()})
					} else {
						c.post(event{kind: evClient, ev: wire.ClientEvent{Kind: wire.EventBargeIn}, at: e.cfg.Clock.Now()})
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		log := append(before, sent(l)...)
		checkOwnerLog(t, log)
		ends, refused := 0, 0
		for _, m := range log {
			switch {
			case m.Type == "turn_end":
				ends++
			case m.Type == "error" && m.Code == wire.CodeTooManyTurns:
				refused++
			case m.Type == "error":
				t.Fatalf("error %s: %s", m.Code, m.Message)
			}
		}
		if ends+refused != turns {
			t.Fatalf("%d turn_end and %d refused of %d turns", ends, refused, turns)
		}
		if c.gen.Load() == 1 {
			t.Fatal("no barge-in was taken")
		}
	})
}
