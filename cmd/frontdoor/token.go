package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/frontdoorhq/frontdoor/session/guard"
)

const tokenUsage = `Usage: frontdoor token -tenant NAME [-ttl 2m] [-url wss://host/v1/twilio]

Mints a call token: signed with the secret in -secret-env (the same
variable as serve's -call-token-secret-env), for one telephony call of
the tenant, accepted once before it expires. The application that answers
the call writes it into the TwiML's stream URL:
<Stream url="wss://host/v1/twilio/TOKEN">. With -url the whole stream URL
is printed. (A running server also mints them: POST /v1/call-tokens.)

`

// runToken is `frontdoor token`.
func runToken(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = commandUsage(stderr, fs, tokenUsage)
	tenant := fs.String("tenant", "", "the tenant the call counts against")
	ttl := fs.Duration("ttl", guard.DefaultCallTokenTTL, "how long the token may wait to be used (at most 1h)")
	env := fs.String("secret-env", guard.DefaultCallTokenSecretEnv, "name of the environment variable holding the call-token secret")
	url := fs.String("url", "", "the stream URL without a token (e.g. wss://frontdoor.example.com/v1/twilio): print the whole URL")
	if err := parseQuiet(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *tenant == "" {
		return usageError{fmt.Errorf("-tenant is required")}
	}
	// Checked here so that the message names token's flag, not serve's.
	if v, _ := os.LookupEnv(*env); len(v) < guard.MinSecret {
		return usageError{fmt.Errorf("environment variable %s (-secret-env) must hold the call-token secret, at least %d bytes: the same secret as the server's", *env, guard.MinSecret)}
	}
	set := guard.Settings{CallTokenSecretEnv: *env, RequireCallToken: true}
	ct, err := set.CallTokens(os.LookupEnv)
	if err != nil {
		return usageError{err}
	}
	tok, err := ct.Mint(*tenant, *ttl)
	if err != nil {
		return usageError{err}
	}
	if *url != "" {
		tok = strings.TrimSuffix(*url, "/") + "/" + tok
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}
