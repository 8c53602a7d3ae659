package asterisk_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/media/gateway"
	"github.com/frontdoorhq/frontdoor/media/gateway/asterisk"
)

func Example() {
	c := asterisk.Codec{Control: asterisk.JSON}
	ev, _ := c.Decode(gateway.Frame{Data: []byte("MEDIA_START connection_id:abc channel:WebSocket/abc format:slin16 optimal_frame_size:640")})
	fmt.Println(ev.Start.StreamID, ev.Start.Format)
	f, _ := c.Encode(nil, gateway.Command{Kind: gateway.KindClear})
	fmt.Println(string(f.Data))
	// Output:
	// abc pcm16/16000/1
	// {"command":"FLUSH_MEDIA"}
}
