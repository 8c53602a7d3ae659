package main

import (
	"bytes"
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestFlagsFirst: flags after the positional arguments are parsed as
// flags, with their values; "--" and unknown flags are left to Parse.
func TestFlagsFirst(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("server", "", "")
	fs.Bool("json", false, "")
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"T1", "-server", "http://x"}, []string{"-server", "http://x", "--", "T1"}},
		{[]string{"-server", "http://x", "T1"}, []string{"-server", "http://x", "--", "T1"}},
		{[]string{"T1", "-json", "-server=http://x"}, []string{"-json", "-server=http://x", "--", "T1"}},
		{[]string{"T1", "--", "-json"}, []string{"--", "T1", "-json"}},
		{[]string{"-nope", "T1"}, []string{"-nope", "--", "T1"}},
		{[]string{"-json"}, []string{"-json"}},
		{nil, nil},
	} {
		if got := flagsFirst(fs, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("flagsFirst(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDialable: the URL logged for a listener on every address is one a
// browser on this machine can open.
func TestDialable(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:8080":   "127.0.0.1:8080",
		"[::]:8080":      "127.0.0.1:8080",
		":8080":          "127.0.0.1:8080",
		"127.0.0.1:8080": "127.0.0.1:8080",
		"[::1]:8080":     "[::1]:8080",
		"10.0.0.2:80":    "10.0.0.2:80",
		"nonsense":       "nonsense",
	} {
		if got := dialable(in); got != want {
			t.Errorf("dialable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPaperCuts: each message names the command's own flags, and serve's
// help states the defaults that are used.
func TestPaperCuts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		want     []string
		not      []string
		wantCode int
	}{
		{name: "token without a secret", args: []string{"token", "-tenant", "acme"}, env: map[string]string{"FRONTDOOR_CALL_TOKEN_SECRET": ""},
			want: []string{"-secret-env", "FRONTDOOR_CALL_TOKEN_SECRET"}, not: []string{"-call-token"}, wantCode: 2},
		{name: "complete with flags after the ticket", args: []string{"callbacks", "complete", "T1", "-server", "http://127.0.0.1:1"},
			want: []string{"127.0.0.1:1/v1/callbacks/T1/complete"}, not: []string{"needs one TICKET"}, wantCode: 1},
		{name: "serve help", args: []string{"serve", "-h"},
			want: []string{"-policy policy", "unset: -model demo and -recognize auto", "-log-caller-content"}, not: []string{"(default stub)", "-policy value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d: %s", code, tc.wantCode, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("output has %q:\n%s", n, out)
				}
			}
		})
	}
}
