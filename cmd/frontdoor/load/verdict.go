package load

import (
	"fmt"
	"strings"
)

// Failure is the one-line reason a run does not measure the server, or ""
// when it does: the target was unreachable, every caller failed, or a
// ledger does not balance. frontdoor load exits non-zero with it; a run in
// which the server refused every caller is a measurement, not a failure.
func (r *Report) Failure() string {
	c := r.Callers
	firstErr := ""
	if len(c.Errors) > 0 {
		firstErr = c.Errors[0].Error
	}
	switch {
	case c.Offered == 0:
		return "no caller was offered (the run ended before the first arrival)"
	case c.Answered == 0 && c.ByEnd[EndError] == c.Offered:
		return fmt.Sprintf("target %s unreachable: none of %d callers connected (%s)", r.Config.Target, c.Offered, firstErr)
	case c.ByEnd[EndError]+c.ByEnd[EndDropped] == c.Offered:
		why := firstErr
		if why == "" {
			why = "the server ended every call"
		}
		return fmt.Sprintf("every caller failed: %d of %d ended in error, %d dropped by the server (%s)",
			c.ByEnd[EndError], c.Offered, c.ByEnd[EndDropped], why)
	case r.Turns.Offered > 0 && r.Goodput.Completed == 0 && r.Turns.ByEnd[dFailed] > 0:
		return fmt.Sprintf("no turn succeeded: %d of %d turns failed%s (a backend is down or failing: the server's /readyz and logs name it)",
			r.Turns.ByEnd[dFailed], r.Turns.Offered, r.failedAt())
	case !c.Balanced:
		return fmt.Sprintf("the callers' ledger does not balance: offered %d != refused %d + queued %d + active %d + terminal %d",
			c.Offered, c.RefusedBeforeRetention, c.Queued, c.Active, c.Terminal)
	case !r.Turns.Balanced:
		t := r.Turns
		return fmt.Sprintf("the turns' ledger does not balance: offered %d != refused %d + queued %d + active %d + terminal %d",
			t.Offered, t.RefusedBeforeRetention, t.Queued, t.Active, t.Terminal)
	}
	var unbalanced []string
	for _, s := range r.Server.Stages {
		if !s.Balanced {
			unbalanced = append(unbalanced, s.Stage)
		}
	}
	if len(unbalanced) > 0 {
		return "the server's ledger of stage " + strings.Join(unbalanced, ", ") + " does not balance after the run"
	}
	return ""
}

// failedAt names the stages where turns failed, as " at model, synthesis"
// ("" when no stage counted one).
func (r *Report) failedAt() string {
	var at []string
	for _, s := range r.Stages {
		if s.Dispositions[dFailed] > 0 {
			at = append(at, s.Stage)
		}
	}
	if len(at) == 0 {
		return ""
	}
	return " at " + strings.Join(at, ", ")
}
