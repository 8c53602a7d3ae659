package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frontdoorhq/frontdoor/fallback"
)

const callbacksUsage = `Usage: frontdoor callbacks list|claim|complete|fail [flags] [TICKET]

  list      [-status pending,claimed,...] [-json]   list callbacks, numbers redacted
  claim     -operator NAME [-callback-lease 15m]    claim the oldest waiting callback; prints its number
  complete  [-attempt N] [-note TEXT] TICKET        record a callback made
  fail      [-attempt N] [-reason TEXT] TICKET      record a callback given up

With -server URL the command goes through a running server's HTTP API
(/v1/callbacks); without it, it opens the database in -data-dir directly,
which is for a stopped server (a running one keeps its own claim timers),
and refuses a folder without a database unless -create.
-attempt is the claim's fencing token printed by claim; 0 overrides it.
`

// runCallbacks drains the durable callback queue.
func runCallbacks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stderr, callbacksUsage)
			return flag.ErrHelp
		}
		return usageError{errors.New("want list, claim, complete or fail (frontdoor callbacks -h)")}
	}
	verb := args[0]
	switch verb {
	case "list", "claim", "complete", "fail":
	default:
		return usageError{fmt.Errorf("unknown callbacks command %q: want list, claim, complete or fail", verb)}
	}
	fs := flag.NewFlagSet("callbacks "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = commandUsage(stderr, fs, callbacksUsage)
	cfg := fallback.DefaultConfig()
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the durable callback database (the server's -data-dir)")
	create := fs.Bool("create", false, "direct mode: create an empty database when -data-dir has none")
	fs.DurationVar(&cfg.CallbackLease, "callback-lease", cfg.CallbackLease, "claim lease (direct mode)")
	fs.String("config", "", "config file of name = value lines")
	server := fs.String("server", "", "base URL of a running server, e.g. http://127.0.0.1:8080")
	status := fs.String("status", "pending,claimed", "list: statuses, comma-separated, or all")
	asJSON := fs.Bool("json", false, "list/claim: print JSON")
	operator := fs.String("operator", "", "claim: who claims")
	attempt := fs.Int("attempt", 0, "complete/fail: the claim's attempt (0 overrides)")
	note := fs.String("note", "", "complete: note")
	reason := fs.String("reason", "", "fail: reason")
	if err := parseFlags(fs, args[1:], os.LookupEnv); err != nil {
		return err
	}
	var ops callbackOps
	if *server != "" {
		ops = &httpOps{base: strings.TrimRight(*server, "/"), client: &http.Client{Timeout: 30 * time.Second}}
	} else {
		if err := checkDatabase(cfg.DataDir, *create); err != nil {
			return err
		}
		st, err := fallback.OpenSQLite(ctx, cfg.DataDir)
		if err != nil {
			return err
		}
		defer st.Close()
		ops = &directOps{st: st, lease: cfg.CallbackLease}
	}
	switch verb {
	case "list":
		var statuses []fallback.Status
		if *status != "all" {
			for _, s := range strings.Split(*status, ",") {
				statuses = append(statuses, fallback.Status(strings.TrimSpace(s)))
			}
		}
		list, err := ops.list(ctx, statuses)
		if err != nil {
			return err
		}
		return printCallbacks(stdout, list, *asJSON)
	case "claim":
		if *operator == "" {
			return usageError{errors.New("claim needs -operator NAME")}
		}
		c, ok, err := ops.claim(ctx, *operator)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(stderr, "no callback waiting")
			return nil
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(c)
		}
		fmt.Fprintf(stdout, "ticket %s\nnumber %s\nattempt %d\nlease until %s\ncall %s turn %s\n",
			c.Ref, c.Number, c.Attempt, c.LeaseUntil.Format(time.RFC3339), c.Call, c.Turn)
		return nil
	case "complete", "fail":
		if fs.NArg() != 1 {
			return usageError{fmt.Errorf("%s needs one TICKET (as list prints it)", verb)}
		}
		to, text := fallback.StatusCompleted, *note
		if verb == "fail" {
			to, text = fallback.StatusFailed, *reason
		}
		c, err := ops.finish(ctx, fs.Arg(0), *attempt, to, text)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s\n", c.Ref, c.Status)
		return nil
	}
	panic("unreachable: verb checked above")
}

// checkDatabase refuses a -data-dir without a callback database, unless
// create: a typo in the folder, or a command run from elsewhere, would
// otherwise list an empty new database as if no caller had asked.
func checkDatabase(dir string, create bool) error {
	path, err := filepath.Abs(filepath.Join(dir, fallback.DatabaseFile))
	if err != nil {
		return fmt.Errorf("-data-dir %s: %w", dir, err)
	}
	switch _, err := os.Stat(path); {
	case err == nil || create:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no callback database at %s: give the server's -data-dir, or -server URL for a running server (-create makes an empty one)", path)
	default:
		return fmt.Errorf("-data-dir %s: %w", dir, err)
	}
}

func printCallbacks(w io.Writer, list []fallback.Callback, asJSON bool) error {
	if asJSON {
		for i := range list {
			list[i] = fallback.RedactedCallback(list[i])
		}
		return json.NewEncoder(w).Encode(list)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TICKET\tSTATUS\tACCEPTED\tATTEMPT\tNUMBER\tCALL\tTURN")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", c.Ref, c.Status, c.Accepted.UTC().Format(time.RFC3339), c.Attempt, fallback.Redact(c.Number), c.Call, c.Turn)
	}
	return tw.Flush()
}

// callbackOps is what the subcommands need, from the file or the server.
type callbackOps interface {
	list(ctx context.Context, statuses []fallback.Status) ([]fallback.Callback, error)
	claim(ctx context.Context, operator string) (fallback.Callback, bool, error)
	finish(ctx context.Context, ref string, attempt int, to fallback.Status, note string) (fallback.Callback, error)
}

type directOps struct {
	st    *fallback.SQLiteStore
	lease time.Duration
}

func (d *directOps) list(ctx context.Context, statuses []fallback.Status) ([]fallback.Callback, error) {
	return d.st.List(ctx, 0, statuses...)
}

// claim returns claims whose lease ran out to the queue first, then claims
// the oldest pending callback; another process claiming the same one
// first makes this try the next.
func (d *directOps) claim(ctx context.Context, operator string) (fallback.Callback, bool, error) {
	now := time.Now()
	claimed, err := d.st.List(ctx, 0, fallback.StatusClaimed)
	if err != nil {
		return fallback.Callback{}, false, err
	}
	for _, c := range claimed {
		if c.LeaseUntil.Before(now) {
			if err := d.st.Return(ctx, c.Ref, c.Attempt, now); err != nil && !errors.Is(err, fallback.ErrLeaseLost) {
				return fallback.Callback{}, false, err
			}
		}
	}
	for range 8 {
		pending, err := d.st.List(ctx, 1, fallback.StatusPending)
		if err != nil || len(pending) == 0 {
			return fallback.Callback{}, false, err
		}
		c, err := d.st.Claim(ctx, pending[0].Ref, operator, now, now.Add(d.lease))
		if errors.Is(err, fallback.ErrNotLive) {
			continue
		}
		return c, err == nil, err
	}
	return fallback.Callback{}, false, errors.New("claim: lost every race; try again")
}

func (d *directOps) finish(ctx context.Context, ref string, attempt int, to fallback.Status, note string) (fallback.Callback, error) {
	return d.st.Finish(ctx, ref, attempt, to, note, time.Now())
}

type httpOps struct {
	base   string
	client *http.Client
}

func (h *httpOps) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil && len(b) > 0 {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

func (h *httpOps) list(ctx context.Context, statuses []fallback.Status) ([]fallback.Callback, error) {
	var out struct{ Callbacks []fallback.Callback }
	q := "?limit=10000"
	if len(statuses) > 0 {
		s := make([]string, len(statuses))
		for i, st := range statuses {
			s[i] = string(st)
		}
		q += "&status=" + strings.Join(s, ",")
	}
	_, err := h.do(ctx, http.MethodGet, "/v1/callbacks"+q, nil, &out)
	return out.Callbacks, err
}

func (h *httpOps) claim(ctx context.Context, operator string) (fallback.Callback, bool, error) {
	var out struct{ Callback fallback.Callback }
	code, err := h.do(ctx, http.MethodPost, "/v1/callbacks/claim", map[string]string{"operator": operator}, &out)
	if err != nil || code == http.StatusNoContent {
		return fallback.Callback{}, false, err
	}
	return out.Callback, true, nil
}

func (h *httpOps) finish(ctx context.Context, ref string, attempt int, to fallback.Status, note string) (fallback.Callback, error) {
	verb, key := "complete", "note"
	if to == fallback.StatusFailed {
		verb, key = "fail", "reason"
	}
	var out struct{ Callback fallback.Callback }
	_, err := h.do(ctx, http.MethodPost, "/v1/callbacks/"+url.PathEscape(ref)+"/"+verb, map[string]any{"attempt": attempt, key: note}, &out)
	return out.Callback, err
}
