package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pcm"
	"github.com/frontdoorhq/frontdoor/media/sip/siptest"
	"github.com/frontdoorhq/frontdoor/media/wav"
	mediartc "github.com/frontdoorhq/frontdoor/media/webrtc"
)

// sentinel is a word no prompt, identifier or metric name contains: it
// stands for whatever a caller says.
const sentinel = "quokkasentinel"

// callerWords is what the fake recognizer hears in any audio, and the
// native callers' text: an answer to an offer ("call me back") carrying
// the sentinel.
const callerWords = "please call me back " + sentinel

// fakeOpenAI is an OpenAI-compatible server on loopback: every upload is
// transcribed as callerWords, and the model repeats the sentinel, so
// both what a caller says and what the model answers carry it. A turn
// whose text contains "hold" keeps the model busy until the request ends.
func fakeOpenAI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","created":1,"owned_by":"t"}]}`)
		case "/v1/audio/transcriptions":
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"text":%q}`, callerWords)
		case "/v1/chat/completions":
			if strings.Contains(string(body), "hold") {
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range []string{"You said ", sentinel, "."} {
				_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", c)
			}
			_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// countLines is how many of p's log lines contain s.
func countLines(p *proc, s string) int {
	n := 0
	for _, l := range p.lines() {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// waitLines waits until n of p's log lines contain s.
func waitLines(t *testing.T, p *proc, s string, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%d log lines with %q", n, s), func() bool { return countLines(p, s) >= n })
}

// speech is the test recording of a caller, at rate.
func speech(t *testing.T, rate int) []int16 {
	t.Helper()
	a, err := wav.ReadFile("../../media/testdata/hello-8k.wav")
	if err != nil {
		t.Fatal(err)
	}
	s, err := pcm.Resample(a.Samples, a.SampleRate, rate)
	if err != nil {
		t.Fatal(err)
	}
	return append(s, make([]int16, rate)...) // a second of quiet ends the utterance
}

// jsonPhone is a caller on a gateway dialect that carries base64 μ-law in
// JSON text frames (Twilio, Plivo): start and media messages, and the echo
// of each of the server's marks once its audio is "played".
type jsonPhone struct {
	c     *websocket.Conn
	media func(seq int, payload string) string
	echo  func(m map[string]any) string // "" when m needs no answer
}

func (ph *jsonPhone) say(ctx context.Context, t *testing.T, samples []int16) {
	t.Helper()
	for i := 0; len(samples) > 0; i++ {
		n := min(160, len(samples))
		msg := ph.media(i+2, base64.StdEncoding.EncodeToString(g711.EncodeMulaw(nil, samples[:n])))
		if err := ph.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		samples = samples[n:]
	}
}

// listen answers the server's marks until the connection ends.
func (ph *jsonPhone) listen(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			_, b, err := ph.c.Read(ctx)
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			if r := ph.echo(m); r != "" {
				_ = ph.c.Write(ctx, websocket.MessageText, []byte(r))
			}
		}
	}()
}

func dialTwilio(ctx context.Context, t *testing.T, p *proc, caller string) *jsonPhone {
	t.Helper()
	c, _, err := dial(t, p.ws("/v1/twilio"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{`{"event":"connected","protocol":"Call","version":"1.0.0"}`,
		`{"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"streamSid":"MZ1","accountSid":"AC1","callSid":"CA1",` +
			`"tracks":["inbound"],"customParameters":{"caller":"` + caller + `"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	return &jsonPhone{c: c,
		media: func(seq int, payload string) string {
			return fmt.Sprintf(`{"event":"media","sequenceNumber":"%d","streamSid":"MZ1","media":{"track":"inbound","chunk":"%d","timestamp":"%d","payload":"%s"}}`,
				seq, seq, seq*20, payload)
		},
		echo: func(m map[string]any) string {
			if m["event"] != "mark" {
				return ""
			}
			b, _ := json.Marshal(m)
			return string(b)
		},
	}
}

func dialPlivo(ctx context.Context, t *testing.T, p *proc) *jsonPhone {
	t.Helper()
	c, _, err := dial(t, p.ws("/v1/plivo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := `{"event":"start","sequenceNumber":1,"start":{"callId":"call1","streamId":"st1","accountId":"acc1","tracks":["inbound"],` +
		`"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}},"extra_headers":"{}"}`
	if err := c.Write(ctx, websocket.MessageText, []byte(start)); err != nil {
		t.Fatal(err)
	}
	return &jsonPhone{c: c,
		media: func(seq int, payload string) string {
			return fmt.Sprintf(`{"event":"media","sequenceNumber":%d,"streamId":"st1","media":{"track":"inbound","timestamp":"%d","chunk":%d,"payload":"%s"}}`,
				seq, seq*20, seq, payload)
		},
		echo: func(m map[string]any) string {
			if m["event"] != "checkpoint" {
				return ""
			}
			return fmt.Sprintf(`{"event":"playedStream","sequenceNumber":9,"streamId":"st1","name":%q}`, m["name"])
		},
	}
}

// TestCallerContentStaysPrivate: what callers say (as text on the native
// WebSocket, as speech on native, WebRTC, Twilio, Plivo and SIP) and what
// the model answers them reach no log line at debug level, no metric and no
// span. The run includes answers to an offer said out loud (a phone
// caller's), which used to be logged word for word. Each door runs against
// a server of its own, at once, and each server's output is checked.
func TestCallerContentStaysPrivate(t *testing.T) {
	t.Parallel()
	for _, door := range []struct {
		name string
		call func(ctx context.Context, t *testing.T, p *proc, wg *sync.WaitGroup)
	}{
		{"native", privateNative},
		{"twilio", func(ctx context.Context, t *testing.T, p *proc, wg *sync.WaitGroup) {
			privatePhone(ctx, t, p, wg, dialTwilio(ctx, t, p, "+15550142"))
		}},
		{"plivo", func(ctx context.Context, t *testing.T, p *proc, wg *sync.WaitGroup) {
			privatePhone(ctx, t, p, wg, dialPlivo(ctx, t, p))
		}},
		{"webrtc", privateWebRTC},
		{"sip", privateSIP},
		{"spoken answer", privateSpokenAnswer},
	} {
		t.Run(door.name, func(t *testing.T) {
			t.Parallel()
			ai := fakeOpenAI(t)
			rcv := newOTLPReceiver()
			defer rcv.srv.Close()
			p := startServe(t, nil, "-log-level", "debug", "-otlp-endpoint", rcv.addr(), "-otlp-insecure",
				"-recognize", "openai", "-recognize-url", ai.URL+"/v1", "-model", "openai", "-model-url", ai.URL+"/v1", "-model-name", "m",
				"-model-slots", "1", "-model-queue", "1", "-sip-listen", "127.0.0.1:0", "-webrtc-loopback-only",
				"-drain-timeout", "1s") // checkPrivate's SIGTERM ends the calls still up
			t.Cleanup(func() {
				if t.Failed() {
					for _, l := range p.lines() {
						t.Log(l)
					}
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			door.call(ctx, t, p, &wg)
			checkPrivate(t, p, rcv)
		})
	}
}

// completed is the log of a turn that completed.
const completed = `"disposition":"completed"`

// admittedCaller is a native caller (PCM16 at 16 kHz) whose session was
// admitted.
func admittedCaller(t *testing.T, p *proc) *websocket.Conn {
	t.Helper()
	c, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"type":"hello","audio":{"encoding":"pcm16","rate":16000}}`)
	if m := next(t, c, "session"); m.Disposition != "admitted" {
		t.Fatalf("session %+v", m)
	}
	return c
}

// privateNative: a typed turn, then a spoken one, on the native WebSocket.
func privateNative(ctx context.Context, t *testing.T, p *proc, _ *sync.WaitGroup) {
	nat := admittedCaller(t, p)
	send(t, nat, `{"type":"turn","id":"t1","text":"`+callerWords+`"}`)
	if m := next(t, nat, "turn_end"); m.Disposition != "completed" {
		t.Fatalf("typed turn_end %+v", m)
	}
	// A spoken turn after a typed one on the same call is refused
	// out-of-order (the generation does not move on): a second call speaks.
	nat2 := admittedCaller(t, p)
	for s := speech(t, 16000); len(s) > 0; {
		n := min(320, len(s))
		if err := nat2.Write(ctx, websocket.MessageBinary, pcm.Encode(nil, s[:n])); err != nil {
			t.Fatal(err)
		}
		s = s[n:]
	}
	if m := next(t, nat2, "transcript"); !strings.Contains(m.Text, sentinel) {
		t.Fatalf("native transcript %+v: the fake recognizer was not used", m)
	}
	// The recording may come out as more than one utterance; one of them
	// completes.
	for m := next(t, nat2, "turn_end"); m.Disposition != "completed"; m = next(t, nat2, "turn_end") {
		t.Logf("spoken turn_end %+v", m)
	}
	// -log-level debug says something of native calls too.
	if n := countLines(p, "native: websocket accepted"); n < 2 {
		t.Errorf("%d debug lines of accepted native sockets, want 2", n)
	}
}

// phoneAdmitted waits until n phone calls were told they were admitted:
// a caller's audio before that is not listened to, and a phone here sends
// its recording at once, not in real time.
func phoneAdmitted(t *testing.T, p *proc, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, "a phone call admitted", func() bool {
		admitted := 0
		for _, l := range p.lines() {
			if strings.Contains(l, `: session",`) && strings.Contains(l, `"disposition":"admitted"`) {
				admitted++
			}
		}
		return admitted >= n
	})
}

// privatePhone: a spoken turn on a gateway dialect, to its end.
func privatePhone(ctx context.Context, t *testing.T, p *proc, wg *sync.WaitGroup, ph *jsonPhone) {
	ph.listen(ctx, wg)
	phoneAdmitted(t, p, 1)
	ph.say(ctx, t, speech(t, 8000))
	waitLines(t, p, completed, 1)
	_ = ph.c.Close(websocket.StatusNormalClosure, "")
}

// privateWebRTC: a pion peer on /v1/webrtc says the recording over RTP.
func privateWebRTC(ctx context.Context, t *testing.T, p *proc, _ *sync.WaitGroup) {
	rtcTranscript := rtcSay(ctx, t, p, speech(t, 8000))
	waitFor(t, 30*time.Second, "the WebRTC caller's transcript", func() bool { return strings.Contains(rtcTranscript(), sentinel) })
}

// privateSIP: baresip calls and says its recording.
func privateSIP(ctx context.Context, t *testing.T, p *proc, _ *sync.WaitGroup) {
	sipAddr := (&sipLogs{p: p}).wait(t, 10*time.Second, "sip listening", nil)["addr"].(string)
	phone := siptest.Start(t, siptest.Options{User: "+15550143", Source: mustAbs(t, "../../media/testdata/hello-8k.wav")})
	phone.Command(ctx, "dial", fmt.Sprintf("sip:acme@%s", sipAddr))
	phone.WaitEvent(ctx, "CALL_ESTABLISHED")
	waitLines(t, p, completed, 1)
	phone.Command(ctx, "hangup", "")
}

// privateSpokenAnswer: the model is held, so a phone caller's turn
// expires in its queue and is offered a callback, which the caller takes
// out loud.
func privateSpokenAnswer(ctx context.Context, t *testing.T, p *proc, wg *sync.WaitGroup) {
	nat := admittedCaller(t, p)
	send(t, nat, `{"type":"turn","id":"hold","text":"hold"}`)
	waitFor(t, 10*time.Second, "the model held", func() bool { return stageLeased(t, p, "model") == 1 })
	tw := dialTwilio(ctx, t, p, "+15550144")
	tw.listen(ctx, wg)
	phoneAdmitted(t, p, 1)
	tw.say(ctx, t, speech(t, 8000)) // refused: the menu is said
	waitLines(t, p, "keypad menu", 1)
	tw.say(ctx, t, speech(t, 8000)) // "please call me back"
	waitLines(t, p, "twilio: spoken answer", 1)
	_ = tw.c.Close(websocket.StatusNormalClosure, "")
}

// checkPrivate stops p and checks that none of its log lines, its
// metrics or the spans rcv received carries the sentinel.
func checkPrivate(t *testing.T, p *proc, rcv *otlpReceiver) {
	t.Helper()
	metrics := httpGet(t, p.url("/metrics"))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-p.exited
	p.exited <- err // for the cleanup

	for _, l := range p.lines() {
		if strings.Contains(strings.ToLower(l), sentinel) {
			t.Errorf("log line carries what the caller said: %s", l)
		}
	}
	if strings.Contains(metrics, sentinel) {
		t.Errorf("/metrics carries what the caller said")
	}
	posts := rcv.received()
	if len(posts) == 0 {
		t.Error("no spans exported")
	}
	for _, post := range posts {
		b, _ := proto.Marshal(post.req)
		if strings.Contains(string(b), sentinel) {
			t.Errorf("a span carries what the caller said: %v", post.req)
		}
	}
}

func mustAbs(t *testing.T, name string) string {
	t.Helper()
	a, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// TestLoggerCallerContent: serve's logger drops caller_* attributes unless
// -log-caller-content is on, in each format, and writes durations as
// strings rather than nanoseconds.
func TestLoggerCallerContent(t *testing.T) {
	for _, tc := range []struct {
		format string
		keep   bool
		want   []string
		not    []string
	}{
		{"json", false, []string{`"kind":"callback"`, `"wait":"1.5s"`}, []string{sentinel, "caller_transcript", "1500000000"}},
		{"json", true, []string{`"caller_transcript":"` + sentinel + `"`, `"wait":"1.5s"`}, []string{"1500000000"}},
		{"text", false, []string{"kind=callback", "wait=1.5s"}, []string{sentinel, "caller_transcript"}},
		{"text", true, []string{"caller_transcript=" + sentinel}, nil},
	} {
		t.Run(fmt.Sprintf("%s/keep=%v", tc.format, tc.keep), func(t *testing.T) {
			var b strings.Builder
			log, err := newLogger(tc.format, "debug", tc.keep, &b)
			if err != nil {
				t.Fatal(err)
			}
			log.With("call", "c1").WithGroup("g").Debug("spoken answer", "kind", "callback", "caller_transcript", sentinel, "wait", 1500*time.Millisecond)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%q lacks %q", b.String(), w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("%q has %q", b.String(), n)
				}
			}
		})
	}
}

// rtcSay calls /v1/webrtc as a browser would (a pion peer, loopback ICE),
// sends samples (8 kHz) as its microphone, and returns a reader of the
// last transcript the events channel carried. The call ends with the test.
func rtcSay(ctx context.Context, t *testing.T, p *proc, samples []int16) func() string {
	t.Helper()
	ws, _, err := dial(t, p.ws("/v1/webrtc"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var transcript string
	peer, err := mediartc.NewPeer(mediartc.Config{
		LoopbackOnly: true,
		OnEvent: func(data []byte) {
			var m struct{ Type, Text string }
			if json.Unmarshal(data, &m) == nil && m.Type == "transcript" {
				mu.Lock()
				transcript = m.Text
				mu.Unlock()
			}
		},
	}, mediartc.WebSocketTransport{Conn: ws})
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			sig, err := mediartc.ReadSignal(pctx, ws)
			if err != nil {
				return
			}
			_ = peer.HandleSignal(pctx, sig)
		}
	})
	wg.Go(func() { _ = peer.Run(pctx) })
	t.Cleanup(func() {
		cancel()
		_ = peer.Close()
		_ = ws.CloseNow()
		wg.Wait()
	})
	if err := peer.Offer(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-peer.Open():
	case <-ctx.Done():
		t.Fatal("the WebRTC events channel did not open")
	}
	if err := peer.SendPCM(samples[:len(samples)/160*160]); err != nil {
		t.Fatal(err)
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return transcript
	}
}
