package plivo_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/plivo"
)

func Example() {
	var c plivo.Codec
	ev, _ := c.Decode(gateway.Frame{Data: []byte(`{"event":"playedStream","streamId":"s1","name":"u1.1"}`)})
	fmt.Println(ev.Kind, ev.Mark)
	f, _ := c.Encode(nil, gateway.Command{Kind: gateway.KindMark, StreamID: "s1", Mark: "u2.2"})
	fmt.Println(string(f.Data))
	// Output:
	// mark u1.1
	// {"event":"checkpoint","streamId":"s1","name":"u2.2"}
}
