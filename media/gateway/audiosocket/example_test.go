package audiosocket_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/audiosocket"
)

func Example() {
	c := audiosocket.Codec{SampleRate: 8000}
	ev, _ := c.Decode(gateway.Frame{Binary: true, Data: []byte{0x03, 0x00, 0x01, '7'}})
	fmt.Println(ev.Kind, ev.Digit)
	f, _ := c.Encode(nil, gateway.Command{Kind: gateway.KindHangup})
	fmt.Printf("% x\n", f.Data)
	// Output:
	// dtmf 7
	// 00 00 00
}
