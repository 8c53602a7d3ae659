package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/frontdoorhq/frontdoor/session"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
	"github.com/frontdoorhq/frontdoor/session/server"
	"github.com/frontdoorhq/frontdoor/stages"
)

// A server with its own stage limits, a page at / and an extra handler.
func ExampleNew() {
	model, synth := stub.NewModel(stub.Settings{}), stub.NewSynthesizer(stub.Settings{})
	defer model.Close()
	defer synth.Close()
	srv, err := server.New(server.Config{
		Config: session.Config{
			Model:        stages.Limits{Slots: 4, Waiting: 8, MaxAge: 1500 * time.Millisecond},
			ModelBackend: model,
			Synthesizer:  synth,
		},
		Root: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "the demo page")
		}),
		Handlers: map[string]http.Handler{
			"GET /v1/hello": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") }),
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, path := range []string{"/", "/v1/hello", "/readyz"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %q\n", path, resp.StatusCode, b)
	}
	v, _ := srv.Stages().Stage(session.StageModel)
	fmt.Println("model slots", v.Slots, "queue", v.QueueLimit, "max wait", v.MaxWaitMS, "ms")
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// / 200 "the demo page"
	// /v1/hello 200 "hello"
	// /readyz 200 "{\"ready\":true,\"reasons\":[]}\n"
	// model slots 4 queue 8 max wait 1500 ms
}
