package vonage_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/vonage"
)

func Example() {
	var c vonage.Codec
	ev, _ := c.Decode(gateway.Frame{Data: []byte(`{"event":"websocket:connected","content-type":"audio/l16;rate=16000","caller":"+15550100"}`)})
	fmt.Println(ev.Kind, ev.Start.Format, ev.Start.Params["caller"])
	f, _ := c.Encode(nil, gateway.Command{Kind: gateway.KindClear})
	fmt.Println(string(f.Data))
	// Output:
	// start pcm16/16000/1 +15550100
	// {"action":"clear"}
}
