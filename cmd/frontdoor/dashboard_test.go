package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dashboardExprs returns every PromQL expression of the Grafana dashboard
// at path, by panel title.
func dashboardExprs(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

// scrapedSeries reads a Prometheus text exposition: for every sample name
// (histograms' _bucket, _sum and _count included), each label's values.
func scrapedSeries(t *testing.T, url string) map[string]map[string]map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	out := map[string]map[string]map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		labels := ""
		if i := strings.IndexByte(line, '{'); i >= 0 && i < len(name) {
			name, labels = line[:i], line[i:strings.LastIndexByte(line, '}')+1]
		}
		if out[name] == nil {
			out[name] = map[string]map[string]bool{}
		}
		for _, m := range label.FindAllStringSubmatch(labels, -1) {
			if out[name][m[1]] == nil {
				out[name][m[1]] = map[string]bool{}
			}
			out[name][m[1]][m[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGrafanaDashboard: every PromQL expression of docs/grafana-dashboard.json
// names metrics that frontdoor serve really exposes on /metrics, with label
// names its series carry and the literal label values it reports, so the
// dashboard cannot drift from the server. Vector metrics appear only once
// something was counted, so the server first lives through what every
// panel shows: a refused upgrade, a protocol error, a barge-in whose
// backend stops late (overdue, quarantined, lifted), a backend failure and
// a hangup.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	panels := dashboardExprs(t, "../../docs/grafana-dashboard.json")
	if len(panels) < 10 {
		t.Fatalf("%d panels", len(panels))
	}

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String() + "/v1"
	dead.Close() // nothing listens there: synthesis fails unavailable
	p := startServe(t, nil, "-synth", "openai", "-synth-url", deadURL,
		"-stub-token-delay", "20ms", "-stub-cleanup-delay", "200ms", "-cleanup-timeout", "50ms", "-quarantine-after", "1")
	logged := func(msg string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case m := <-p.logs:
				if m["msg"] == msg {
					return
				}
			case <-timeout:
				t.Fatalf("no log line %q", msg)
			}
		}
	}

	if _, resp, err := dial(t, p.ws("/v1/session"), nil, "bogus"); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown subprotocol: %v %v, want 400", resp, err)
	}
	c, _, err := dial(t, p.ws("/v1/session"), nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, c, "session")
	send(t, c, `{"type":"bogus"}`)
	next(t, c, "error")
	send(t, c, `{"type":"turn","id":"t1","text":"tell me a story"}`)
	next(t, c, "text")
	send(t, c, `{"type":"barge_in"}`)
	if m := next(t, c, "turn_end"); m.Disposition != "cancelled" {
		t.Fatalf("t1 %+v", m)
	}
	logged("backend quarantine lifted: every overdue cleanup confirmed")
	send(t, c, `{"type":"turn","id":"t2","text":"hello"}`)
	if m := next(t, c, "turn_end"); m.Disposition != "failed" || m.Stage != "synthesis" {
		t.Fatalf("t2 %+v", m)
	}
	send(t, c, `{"type":"hangup"}`)
	closeCode(t, c)
	logged("call ended") // after the call was counted

	series := scrapedSeries(t, p.url("/metrics"))
	metric := regexp.MustCompile(`\bfrontdoor_[a-z0-9_]+\b`)
	selector := regexp.MustCompile(`\b(frontdoor_[a-z0-9_]+)\{([^}]*)\}`)
	matcher := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	literal := regexp.MustCompile(`^[a-z0-9_|-]+$`)
	names := 0
	for title, exprs := range panels {
		for _, e := range exprs {
			found := metric.FindAllString(e, -1)
			if len(found) == 0 {
				t.Errorf("panel %q: %q names no frontdoor metric", title, e)
			}
			for _, name := range found {
				names++
				if series[name] == nil {
					t.Errorf("panel %q: %s is not on /metrics (a renamed metric, or a new one the scenario above does not produce)", title, name)
				}
			}
			for _, sel := range selector.FindAllStringSubmatch(e, -1) {
				name, have := sel[1], series[sel[1]]
				if have == nil {
					continue
				}
				for _, m := range matcher.FindAllStringSubmatch(sel[2], -1) {
					lbl, op, val := m[1], m[2], m[3]
					if lbl == "instance" || lbl == "job" { // added by Prometheus
						continue
					}
					if have[lbl] == nil {
						t.Errorf("panel %q: %s has no label %s", title, name, lbl)
						continue
					}
					if (op != "=" && op != "=~") || !literal.MatchString(val) {
						continue
					}
					for _, v := range strings.Split(val, "|") {
						if !have[lbl][v] {
							t.Errorf("panel %q: %s never has %s=%q", title, name, lbl, v)
						}
					}
				}
			}
		}
	}
	t.Logf("%d panels, %d metric references checked", len(panels), names)
}
