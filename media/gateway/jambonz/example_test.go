package jambonz_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/jambonz"
)

func Example() {
	var c jambonz.Codec
	ev, _ := c.Decode(gateway.Frame{Data: []byte(`{"callSid":"cs-1","from":"+15550100","sampleRate":16000,"mixType":"mono"}`)})
	fmt.Println(ev.Kind, ev.Start.StreamID, ev.Start.From, ev.Start.Format)
	f, _ := c.Encode(nil, gateway.Command{Kind: gateway.KindClear})
	fmt.Println(string(f.Data))
	// Output:
	// start cs-1 +15550100 pcm16/16000/1
	// {"type":"killAudio"}
}
