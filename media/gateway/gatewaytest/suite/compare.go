package suite

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
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

// Testdata returns the contents of testdata/name, a dialect's sample
// messages.
func Testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Text returns a text frame of s.
func Text(s string) gateway.Frame { return gateway.Frame{Data: []byte(s)} }

// ErrorCase is an input a decoder must refuse with a *gateway.DecodeError
// wrapping Want.
type ErrorCase struct {
	Name string
	In   gateway.Frame
	Want error
}

// CheckDecodeErrors runs codec.Decode on every case.
func CheckDecodeErrors(t *testing.T, codec gateway.Codec, cases []ErrorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := codec.Decode(tc.In)
			var de *gateway.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.Want) {
				t.Fatalf("Decode = %v, want a *gateway.DecodeError wrapping %v", err, tc.Want)
			}
		})
	}
}

// Seeds returns the contents of the named testdata files, for Fuzz.
func Seeds(f *testing.F, names ...string) [][]byte {
	var seeds [][]byte
	for _, n := range names {
		seeds = append(seeds, Testdata(f, n))
	}
	return seeds
}

// EventCase is a sample message in testdata and the event it decodes to.
type EventCase struct {
	File string
	Want gateway.Event
}

// CheckDecodeFiles decodes every case's file with codec.Decode.
func CheckDecodeFiles(t *testing.T, codec gateway.Codec, cases []EventCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.File, func(t *testing.T) {
			got, err := codec.Decode(gateway.Frame{Data: Testdata(t, tc.File)})
			if err != nil {
				t.Fatal(err)
			}
			SameEvent(t, got, tc.Want)
		})
	}
}

// CommandCase is a sample message to a gateway and the command it decodes to.
type CommandCase struct {
	File string
	Want gateway.Command
}

// CheckDecodeCommandFiles decodes every case's file with codec.DecodeCommand.
func CheckDecodeCommandFiles(t *testing.T, codec gateway.Codec, cases []CommandCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.File, func(t *testing.T) {
			got, err := codec.DecodeCommand(gateway.Frame{Data: Testdata(t, tc.File)})
			if err != nil {
				t.Fatal(err)
			}
			SameCommand(t, got, tc.Want)
		})
	}
}
