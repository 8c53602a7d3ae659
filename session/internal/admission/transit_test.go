package admission

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestInbox: items come out in order as they are put, a reader waits for
// the next one, and Next reports the end once the stage before is done
// and every item was taken, or when its context ends.
func TestInbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewInbox()
		q.Put("a")
		got := make(chan string, 4)
		go func() {
			for {
				s, ok := q.Next(context.Background())
				if !ok {
					close(got)
					return
				}
				got <- s
			}
		}()
		if s := <-got; s != "a" {
			t.Fatalf("first %q", s)
		}
		synctest.Wait() // the reader waits for the next item
		select {
		case s := <-got:
			t.Fatalf("%q before it was put", s)
		default:
		}
		q.Put("b")
		q.Put("c")
		q.Close()
		var rest []string
		for s := range got {
			rest = append(rest, s)
		}
		if len(rest) != 2 || rest[0] != "b" || rest[1] != "c" {
			t.Fatalf("rest %q", rest)
		}
	})
	if s, ok := NewInbox("x").Next(context.Background()); !ok || s != "x" {
		t.Fatalf("a filled inbox gave %q %v", s, ok)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := NewInbox().Next(ctx); ok {
		t.Fatal("Next past its context's end")
	}
}
