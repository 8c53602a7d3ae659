package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/agent"
)

const agentUsage = `Usage: frontdoor agent [-listen 127.0.0.1:8090] [-words 25] [-tokens-per-second 10]

Runs a rehearsal agent: an OpenAI-compatible chat completions server that
answers every request with the same reply of -words words, streamed one
word a token at -tokens-per-second after -first-token, in sentences of
-sentence-words. Point serve at it to measure streamed turns against a
model with real pacing and no model:

    frontdoor agent &
    frontdoor serve -model openai -model-url http://127.0.0.1:8090/v1
`

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = commandUsage(stderr, fs, agentUsage)
	listen := fs.String("listen", "127.0.0.1:8090", "address to listen on")
	var c agent.Config
	fs.IntVar(&c.Words, "words", 25, "words in each reply")
	fs.Float64Var(&c.TokensPerSecond, "tokens-per-second", 10, "pace of the words after the first, one word a token")
	fs.DurationVar(&c.FirstToken, "first-token", 100*time.Millisecond, "time from the request to the first word")
	fs.IntVar(&c.SentenceWords, "sentence-words", 12, "end a sentence every that many words")
	fs.BoolVar(&c.NoFinishReason, "no-finish-reason", false, "never send finish_reason (end with [DONE] alone, as some servers do)")
	if err := parseQuiet(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if c.Words < 1 || c.TokensPerSecond <= 0 || c.SentenceWords < 1 {
		return usageError{errors.New("-words, -tokens-per-second and -sentence-words must be positive")}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: agent.Handler(c), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stdout, "agent: http://%s/v1 (%d words at %g tokens/s, first after %v)\n", ln.Addr(), c.Words, c.TokensPerSecond, c.FirstToken)
	go func() { // ends with ctx: the server's Shutdown makes Serve return
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
