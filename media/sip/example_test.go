package sip_test

import (
	"context"
	"fmt"
	"time"

	"github.com/frontdoorhq/frontdoor/media/sip"
)

// A server that answers, says something, waits for a key and hangs up,
// and a client that calls it.
func Example() {
	ctx := context.Background()
	srv, err := sip.Listen(ctx, "127.0.0.1:0", sip.Config{
		Handler: sip.HandlerFunc(func(ctx context.Context, call *sip.Call) {
			fmt.Println("call for tenant", call.Tenant)
			media, err := call.Answer(ctx)
			if err != nil {
				return
			}
			_ = media.WritePCM(make([]int16, 8000)) // 1 s of silence: the prompt
			select {
			case d := <-media.Digits():
				fmt.Println("key", string(d))
				media.Clear() // barge-in: the rest of the prompt is never sent
			case <-ctx.Done():
			}
			_ = call.Hangup(ctx)
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	out, err := sip.Dial(ctx, "sip:acme@"+srv.Addr().String(), sip.DialConfig{From: "+15550100"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer out.Close()
	fmt.Println("answered with", out.Codec())
	_ = out.SendDigit(ctx, '1', 100*time.Millisecond)
	<-out.Done()
	fmt.Println(out.Err())
	// Output:
	// call for tenant acme
	// answered with PCMU
	// key 1
	// sip: far end hung up
}
