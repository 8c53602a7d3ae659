package freeswitch_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/freeswitch"
)

func Example() {
	c := freeswitch.Codec{SampleRate: 8000}
	ev, _ := c.Decode(gateway.Frame{Data: []byte(`{"uuid":"fs-1","caller":"+15550100"}`)})
	fmt.Println(ev.Kind, ev.Start.StreamID, ev.Start.Params["caller"])
	f, _ := c.Encode(nil, gateway.Command{Kind: gateway.KindAudio, Audio: []byte{0, 0}})
	fmt.Println(string(f.Data))
	// Output:
	// start fs-1 +15550100
	// {"type":"streamAudio","data":{"audioDataType":"raw","sampleRate":8000,"audioData":"AAA="}}
}
