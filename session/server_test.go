package session

import (
	"slices"
	"strings"
	"testing"
)

func TestNormalTurn(t *testing.T) {
	r := newRig(t)
	c := r.admitted()
	c.send(map[string]any{"type": "turn", "id": "t1", "text": "good morning"})
	all := c.until(isType("turn_end"))
	end := all[len(all)-1]
	if end.Disposition != "completed" || end.Turn != "t1" {
		t.Fatalf("turn_end %+v", end)
	}
	var text strings.Builder
	var frames, bytes int
	for _, m := range all {
		switch m.Type {
		case "text":
			text.WriteString(m.Delta)
		case "binary":
			frames++
			bytes += m.Bytes
		}
	}
	if want := strings.Join(r.model.Deltas("good morning"), ""); text.String() != want {
		t.Fatalf("text %q, want %q", text.String(), want)
	}
	if frames != 5 || bytes != 5*640 {
		t.Fatalf("%d frames %d bytes", frames, bytes)
	}
	got := types(all)
	want := []string{"disposition:model:queued", "disposition:model:admitted", "disposition:model:completed",
		"disposition:synthesis:queued", "disposition:synthesis:admitted", "audio_start", "disposition:synthesis:completed", "turn_end:completed"}
	var filtered []string
	for _, s := range got {
		if s != "text" && s != "binary" && s != "audio_end" {
			filtered = append(filtered, s)
		}
	}
	if !slices.Equal(filtered, want) {
		t.Fatalf("sequence %v", got)
	}
	c.send(map[string]any{"type": "hangup"})
	if _, err := c.read(); err == nil {
		t.Fatal("connection still open after hangup")
	}
	waitFor(t, "call end", func() bool { return r.srv.Calls() == 0 })
	for _, name := range []string{StageSession, StageModel, StageSynthesis} {
		s := r.stage(name)
		if s.Leased != 0 || s.Queued != 0 || s.Owners != 0 {
			t.Errorf("%s after hangup: %+v", name, s)
		}
		if err := s.Ledger.Check(s.Queued, s.Leased); err != nil {
			t.Error(err)
		}
	}
}
