package outbound

import (
	"testing"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
)

// The writer's idle timer is armed once per run, not per wait: a timer that
// fires for an earlier wait is armed again for the rest of the current one.
func TestWriterLinger(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	w := writerState{clock: clk}
	w.wait()
	clk.Advance(Linger * 6 / 10) // a frame came: the writer wrote it
	c := w.wait()                // and waits again
	clk.Advance(Linger * 4 / 10) // the timer of the first wait fires
	<-c
	if w.idleFor() {
		t.Fatal("idle after 0.4 of the linger")
	}
	select {
	case <-c:
		t.Fatal("fired again before the rest of the wait")
	default:
	}
	clk.Advance(Linger*6/10 - time.Millisecond)
	select {
	case <-c:
		t.Fatal("fired before the wait lasted the linger")
	default:
	}
	clk.Advance(time.Millisecond)
	<-c
	if !w.idleFor() {
		t.Fatal("not idle after a whole linger")
	}
	w.release()
	if n := clk.Pending(); n != 0 {
		t.Fatalf("%d timers pending after release", n)
	}
}
