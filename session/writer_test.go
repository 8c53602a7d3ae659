package session

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/stages/stagestest"
)

// fires for an earlier wait is armed again for the rest of the current one.
func TestWriterLinger(t *testing.T) {
	clock := stagestest.NewClock(time.Unix(1_700_000_000, 0))
	w := writerState{clock: clock}
	w.wait()
	clock.Advance(writerLinger * 6 / 10) // a frame came: the writer wrote it
	c := w.wait()                        // and waits again
	clock.Advance(writerLinger * 4 / 10) // the timer of the first wait fires
	<-c
	if w.idleFor() {
		t.Fatal("idle after 0.4 of the linger")
	}
	select {
	case <-c:
		t.Fatal("fired again before the rest of the wait")
	default:
	}
	clock.Advance(writerLinger*6/10 - time.Millisecond)
	select {
	case <-c:
		t.Fatal("fired before the wait lasted the linger")
	default:
	}
	clock.Advance(time.Millisecond)
	<-c
	if !w.idleFor() {
		t.Fatal("not idle after a whole linger")
	}
	w.release()
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending after release", n)
	}
}
