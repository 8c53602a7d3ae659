package load

import (
	"strings"
	"testing"
)

// TestFailure: the reasons a run does not measure the server, and a run
// the server refused entirely, which does.
func TestFailure(t *testing.T) {
	ok := func() *Report {
		return &Report{Config: ReportConfig{Target: "http://127.0.0.1:8080"},
			Callers: CallerLedger{Offered: 4, Terminal: 4, Answered: 4, Connected: 4, ByEnd: map[string]int{EndServed: 4}, Balanced: true},
			Turns:   TurnLedger{Balanced: true},
			Server:  ServerCheck{Stages: []StageCheck{{Stage: "model", Balanced: true}}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*Report)
		want   string
	}{
		{"served", func(*Report) {}, ""},
		{"all refused", func(r *Report) {
			r.Callers.ByEnd = map[string]int{EndRefused: 4}
			r.Callers.Terminal, r.Callers.RefusedBeforeRetention = 0, 4
		}, ""},
		{"none offered", func(r *Report) { r.Callers = CallerLedger{Balanced: true} }, "no caller was offered (the run ended before the first arrival)"},
		{"unreachable", func(r *Report) {
			r.Callers.Answered, r.Callers.Connected, r.Callers.ByEnd = 0, 0, map[string]int{EndError: 4}
			r.Callers.Errors = []ErrorCount{{"dial: connection refused", 4}}
		}, "target http://127.0.0.1:8080 unreachable: none of 4 callers connected (dial: connection refused)"},
		{"every caller failed", func(r *Report) {
			r.Callers.Connected, r.Callers.ByEnd = 0, map[string]int{EndError: 4}
			r.Callers.Errors = []ErrorCount{{"dial: status 404", 4}}
		}, "every caller failed: 4 of 4 ended in error, 0 dropped by the server (dial: status 404)"},
		{"all dropped", func(r *Report) { r.Callers.ByEnd = map[string]int{EndDropped: 4} },
			"every caller failed: 0 of 4 ended in error, 4 dropped by the server (the server ended every call)"},
		{"every turn failed", func(r *Report) {
			r.Turns = TurnLedger{Offered: 6, Terminal: 6, ByEnd: map[string]int{dFailed: 6}, Balanced: true}
			r.Stages = []StageCounts{{Stage: "model", Dispositions: map[string]int{dFailed: 6}}}
		}, "no turn succeeded: 6 of 6 turns failed at model (a backend is down or failing: the server's /readyz and logs name it)"},
		{"some turns completed", func(r *Report) {
			r.Turns = TurnLedger{Offered: 6, Terminal: 6, ByEnd: map[string]int{dFailed: 5, "completed": 1}, Balanced: true}
			r.Goodput.Completed = 1
		}, ""},
		{"every turn refused", func(r *Report) {
			r.Turns = TurnLedger{Offered: 6, Terminal: 6, ByEnd: map[string]int{"model:overloaded": 6}, Balanced: true}
		}, ""},
		{"callers unbalanced", func(r *Report) { r.Callers.Balanced, r.Callers.Terminal = false, 3 },
			"the callers' ledger does not balance: offered 4 != refused 0 + queued 0 + active 0 + terminal 3"},
		{"turns unbalanced", func(r *Report) { r.Turns = TurnLedger{Offered: 2, Terminal: 1} },
			"the turns' ledger does not balance: offered 2 != refused 0 + queued 0 + active 0 + terminal 1"},
		{"server unbalanced", func(r *Report) { r.Server.Stages[0].Balanced = false },
			"the server's ledger of stage model does not balance after the run"},
	} {
		r := ok()
		tc.change(r)
		if got := r.Failure(); got != tc.want {
			t.Errorf("%s: Failure() = %q, want %q", tc.name, got, tc.want)
		}
		if strings.Contains(r.Failure(), "\n") {
			t.Errorf("%s: reason is not one line", tc.name)
		}
	}
}
