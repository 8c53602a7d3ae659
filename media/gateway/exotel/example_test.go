package exotel_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/exotel"
)

func Example() {
	var c exotel.Codec
	ev, _ := c.Decode(gateway.Frame{Data: []byte(`{"event":"dtmf","sequence_number":"7","stream_sid":"MZ1","dtmf":{"digit":"1","duration":"100"}}`)})
	fmt.Println(ev.Kind, ev.Digit, c.Capabilities().FrameDuration)
	// Output: dtmf 1 100ms
}
