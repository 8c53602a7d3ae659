package gatewaytest

import (
	"bytes"
	"maps"
	"testing"

	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// SameEvent fails t unless got and want say the same, field by field.
func SameEvent(t testing.TB, got, want gateway.Event) {
	t.Helper()
	if got.Kind != want.Kind || got.Name != want.Name || got.Seq != want.Seq || got.Info != want.Info ||
		got.Digit != want.Digit || got.Mark != want.Mark || !bytes.Equal(got.Audio, want.Audio) ||
		(got.Err == nil) != (want.Err == nil) || (got.Err != nil && *got.Err != *want.Err) {
		t.Fatalf("event\n got %+v\nwant %+v", got, want)
	}
	if (got.Start == nil) != (want.Start == nil) {
		t.Fatalf("start\n got %+v\nwant %+v", got.Start, want.Start)
	}
	if got.Start != nil {
		g, w := got.Start, want.Start
		if g.StreamID != w.StreamID || g.CallID != w.CallID || g.AccountID != w.AccountID || g.From != w.From ||
			g.To != w.To || g.Format != w.Format || !maps.Equal(g.Params, w.Params) {
			t.Fatalf("start\n got %+v\nwant %+v", *g, *w)
		}
	}
}

// SameCommand fails t unless got and want say the same.
func SameCommand(t testing.TB, got, want gateway.Command) {
	t.Helper()
	if got.Kind != want.Kind || got.StreamID != want.StreamID || got.Format != want.Format ||
		got.Mark != want.Mark || !bytes.Equal(got.Audio, want.Audio) {
		t.Fatalf("command\n got %+v\nwant %+v", got, want)
	}
}
