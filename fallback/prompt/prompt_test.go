package prompt_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/frontdoorhq/frontdoor/fallback/prompt"
	"github.com/frontdoorhq/frontdoor/stages"
)

var update = flag.Bool("update", false, "rewrite docs/PROMPTS.md from the prompt table")

var (
	none     = []prompt.Kind(nil)
	both     = []prompt.Kind{prompt.KindCallback, prompt.KindHandoff}
	callback = []prompt.Kind{prompt.KindCallback}
	handoff  = []prompt.Kind{prompt.KindHandoff}
)

func TestPromptPaths(t *testing.T) {
	tests := []struct {
		name      string
		stage     string
		d         stages.Disposition
		available []prompt.Kind
		offer     []prompt.Kind
		contains  []string
	}{
		{"session overloaded, both free", prompt.StageSession, stages.Overloaded, both, both, []string{"cannot take your call", "call you back, or put you through"}},
		{"session expired, nothing free", prompt.StageSession, stages.Expired, none, nil, []string{"no line came free", "try again"}},
		{"session closed", prompt.StageSession, stages.Closed, both, callback, []string{"temporarily unavailable", "call you back"}},
		{"model overloaded", prompt.StageModel, stages.Overloaded, handoff, handoff, []string{"not started", "put you through to a person"}},
		{"model expired asks to continue", prompt.StageModel, stages.Expired, none, nil, []string{"could not get to your question in time", "Would you like to carry on?"}},
		{"synthesis overloaded", prompt.StageSynthesis, stages.Overloaded, callback, callback, []string{"cannot speak it", "call you back"}},
		{"synthesis expired asks to continue", prompt.StageSynthesis, stages.Expired, none, nil, []string{"carry on"}},
		{"recognize expired asks to continue", prompt.StageRecognize, stages.Expired, none, nil, []string{"carry on"}},
		{"callback full offers handoff only", prompt.StageCallback, stages.Overloaded, both, handoff, []string{"list is full", "Nothing has been scheduled"}},
		{"callback full, nothing else", prompt.StageCallback, stages.Overloaded, none, nil, []string{"Nothing has been scheduled", "try again"}},
		{"handoff full offers callback only", prompt.StageHandoff, stages.Overloaded, both, callback, []string{"waiting line is full", "call you back"}},
		{"handoff expired", prompt.StageHandoff, stages.Expired, none, nil, []string{"stopped looking"}},
		{"callback booked", prompt.StageCallback, stages.Queued, both, nil, []string{"booked"}},
		{"model stale", prompt.StageModel, stages.Stale, both, nil, []string{"earlier part of our conversation"}},
		{"outside the table", prompt.StageModel, stages.Completed, both, nil, []string{"cannot do that right now"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := prompt.For(tt.stage, tt.d, tt.available)
			if p.Stage != tt.stage || p.Reason != tt.d.String() {
				t.Errorf("stage/reason = %q/%q", p.Stage, p.Reason)
			}
			if !slices.Equal(p.Offer, tt.offer) {
				t.Errorf("offer = %v, want %v", p.Offer, tt.offer)
			}
			for _, s := range tt.contains {
				if !strings.Contains(p.Text, s) {
					t.Errorf("text %q lacks %q", p.Text, s)
				}
			}
		})
	}
}

func TestPromptFailedSaysSo(t *testing.T) {
	for _, stage := range []string{prompt.StageCallback, prompt.StageHandoff} {
		p := prompt.Failed(stage, both)
		if p.Reason != prompt.ReasonFailed || !strings.Contains(p.Text, "went wrong") {
			t.Errorf("%s: %+v", stage, p)
		}
		if slices.Contains(p.Offer, prompt.Kind(stage)) {
			t.Errorf("%s: failed fallback offers itself again: %v", stage, p.Offer)
		}
	}
}

// TestPromptRules checks the table's truthfulness rules over every prompt.
func TestPromptRules(t *testing.T) {
	progress := []string{"working on it now", "processing", "in progress", "is being", "will be with you shortly"}
	for _, p := range prompt.All() {
		refused := p.Reason == "overloaded" || p.Reason == "expired" || p.Reason == "closed" || p.Reason == prompt.ReasonFailed
		if refused {
			for _, s := range progress {
				if strings.Contains(strings.ToLower(p.Text), s) {
					t.Errorf("%s/%s claims progress (%q): %q", p.Stage, p.Reason, s, p.Text)
				}
			}
		}
		if strings.Contains(p.Text, "booked.") && !(p.Stage == prompt.StageCallback && p.Reason == "queued") {
			t.Errorf("%s/%s says a callback is booked: %q", p.Stage, p.Reason, p.Text)
		}
		if p.Reason == "expired" && p.Stage != prompt.StageSession && p.Stage != prompt.StageHandoff && len(p.Offer) == 0 && !strings.Contains(p.Text, "?") {
			t.Errorf("%s/%s: an expired turn must ask whether to continue: %q", p.Stage, p.Reason, p.Text)
		}
		// Work whose backend never started was never stopped (issue 15: a
		// turn that expired in the model queue was told "I stopped working
		// on it").
		turnOrCall := p.Stage != prompt.StageCallback && p.Stage != prompt.StageHandoff
		if turnOrCall && !p.Started {
			for _, s := range []string{"stopped", "while i was", "took too long"} {
				if strings.Contains(strings.ToLower(p.Text), s) {
					t.Errorf("%s/%s never started but says %q: %q", p.Stage, p.Reason, s, p.Text)
				}
			}
		}
		if p.Reason == "closed" && !strings.Contains(p.Text, "temporarily unavailable") {
			t.Errorf("%s/closed must say temporarily unavailable: %q", p.Stage, p.Text)
		}
		if len(p.Offer) > 0 && !strings.Contains(p.Text, "?") {
			t.Errorf("%s/%s offers %v without asking: %q", p.Stage, p.Reason, p.Offer, p.Text)
		}
	}
}

// promptsDoc renders docs/PROMPTS.md from the table.
func promptsDoc() string {
	var b strings.Builder
	b.WriteString("# Prompts\n\n")
	b.WriteString("<!-- Generated from fallback/prompt.All by `go test ./fallback/prompt -run TestPromptsDoc -update`. Do not edit by hand. -->\n\n")
	b.WriteString("Every sentence frontdoor says to a caller about a refusal, an expiry or a fallback, from the table in\n")
	b.WriteString("`fallback/prompt/prompt.go` (`prompt.Of(outcome, available)`; `prompt.For` and `prompt.Failed` are shorthands).\n")
	b.WriteString("A prompt is keyed by what happened: the stage, the reason (the disposition the work ended with, or `failed`)\n")
	b.WriteString("and *Started*, whether that stage's backend had started on the work. A refusal or expiry never started (stages\n")
	b.WriteString("refuse and expire only queued work), so an expired question is one \"I could not get to\", never one \"I stopped\";\n")
	b.WriteString("a failure started when the backend failed while it worked, and did not when the store could not admit the work.\n")
	b.WriteString("*Offered* lists the fallbacks offered when exactly those had room (`Service.Available`); the server sends\n")
	b.WriteString("`prompt` with the text, then `offer` with these kinds when there are any.\n\n")
	b.WriteString("Each prompt is spoken for a state of the call (queued, refused, offered, booked, ...). When the state changes,\n")
	b.WriteString("the rest of a prompt spoken for the old state is cut at once and the next prompt follows (docs/PROTOCOL.md,\n")
	b.WriteString("\"Prompts follow the call's state\"). The state changes, and a prompt still playing is cut, when:\n\n")
	b.WriteString("- the session's outcome is sent (`session` admitted, expired, overloaded or closed): \"you are waiting in line\"\n")
	b.WriteString("  stops the moment the caller is admitted or its wait expired, and the expired prompt follows;\n")
	b.WriteString("- another prompt is sent: the rest of the earlier one is dropped and the new one is spoken;\n")
	b.WriteString("- the caller answers an offer (the server's `callback` or `handoff` answer): its question is no longer open.\n\n")
	b.WriteString("A new place in the queue (`session` queued with a new position) and a barge-in do not cut a prompt. A cut prompt's\n")
	b.WriteString("`audio_end` has `cut: true` and the `audio_ms` actually sent; at most the pacing lead (60 ms) had already left.\n")
	b.WriteString("The message that changes the state is never held behind the prompt's audio.\n\n")
	b.WriteString("In fleet mode a call whose session lease is lost (docs/FLEET.md) hears the session row `failed`, not started,\n")
	b.WriteString("without an offer (the call is ending), and is closed with 1013. A turn whose lease is lost stops its audio at\n")
	b.WriteString("once, as a barge-in does, and hears its stage's `failed`, started, row.\n\n")
	b.WriteString("A reply streams: the caller hears its first sentence while the model writes the rest (docs/PROTOCOL.md,\n")
	b.WriteString("\"Streamed replies\"). When a later sentence is refused or expires at the synthesis stage, or the model or the\n")
	b.WriteString("synthesizer fails after the caller heard part of the reply, what was said stands: the caller hears the rows\n")
	b.WriteString("marked *Heard part* (`Outcome.Partial`), which say the rest of the answer was lost, never that nothing was answered.\n\n")
	b.WriteString("Rules the table keeps (checked by `TestPromptRules`):\n\n")
	b.WriteString("- Refused or expired work is never described as in progress.\n")
	b.WriteString("- Work that never started is never described as stopped.\n")
	b.WriteString("- \"Your callback is booked\" is said only after the store durably accepted it (`RequestCallback` returned Queued).\n")
	b.WriteString("- A fallback is offered only while its queue has room, and acceptance checks again.\n")
	b.WriteString("- When a fallback itself fails, the caller hears that nothing was established (reason `failed`).\n")
	b.WriteString("- An expired turn asks whether the caller wants to carry on; closed intake says the service is temporarily unavailable.\n\n")
	stage := ""
	for _, p := range prompt.All() {
		if p.Stage != stage {
			stage = p.Stage
			fmt.Fprintf(&b, "## %s\n\n| Reason | Started | Heard part | Offered | Text |\n|---|---|---|---|---|\n", stage)
		}
		offered := "—"
		if len(p.Offer) > 0 {
			s := make([]string, len(p.Offer))
			for i, k := range p.Offer {
				s[i] = string(k)
			}
			offered = strings.Join(s, ", ")
		}
		started := "no"
		if p.Started {
			started = "yes"
		}
		heard := "no"
		if p.Partial {
			heard = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", p.Reason, started, heard, offered, p.Text)
		_ = stage
	}
	return strings.ReplaceAll(b.String(), "|\n## ", "|\n\n## ") + "\n"
}

// TestEveryOutcomeHasAPrompt: every outcome the server can report to a
// caller has its own row; none falls through to the plain sentence.
func TestEveryOutcomeHasAPrompt(t *testing.T) {
	var want []prompt.Outcome
	for _, r := range []string{"queued", "overloaded", "expired", "closed", prompt.ReasonFailed} {
		want = append(want, prompt.Outcome{Stage: prompt.StageSession, Reason: r})
	}
	for _, st := range []string{prompt.StageRecognize, prompt.StageModel, prompt.StageSynthesis} {
		for _, d := range []stages.Disposition{stages.Overloaded, stages.Expired, stages.Closed, stages.Stale, stages.OutOfOrder} {
			want = append(want, prompt.Outcome{Stage: st, Reason: d.String()})
		}
		want = append(want, prompt.Outcome{Stage: st, Reason: prompt.ReasonFailed},
			prompt.Outcome{Stage: st, Reason: prompt.ReasonFailed, Started: true})
	}
	for _, r := range []string{"overloaded", "expired", "closed", prompt.ReasonFailed} {
		want = append(want, prompt.Outcome{Stage: prompt.StageSynthesis, Reason: r, Partial: true})
	}
	want = append(want, prompt.Outcome{Stage: prompt.StageSynthesis, Reason: prompt.ReasonFailed, Started: true, Partial: true},
		prompt.Outcome{Stage: prompt.StageModel, Reason: prompt.ReasonFailed, Started: true, Partial: true})
	for _, o := range want {
		p := prompt.Of(o, both)
		if o.Partial && !strings.Contains(p.Text, "lost the rest") && !strings.Contains(p.Text, "finish my answer") {
			t.Errorf("%+v: a reply heard in part must say the rest was lost: %q", o, p.Text)
		}
		if p.Text == prompt.Of(prompt.Outcome{Stage: "nowhere"}, nil).Text {
			t.Errorf("%+v has no row", o)
		}
		if p.Stage != o.Stage || p.Reason != o.Reason || p.Started != o.Started {
			t.Errorf("%+v answered by the row of %s/%s/%v", o, p.Stage, p.Reason, p.Started)
		}
	}
}

func TestPromptsDoc(t *testing.T) {
	const path = "../../docs/PROMPTS.md"
	want := promptsDoc()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is out of date with the prompt table: run go test ./fallback/prompt -run TestPromptsDoc -update", path)
	}
}

func ExampleFor() {
	p := prompt.For(prompt.StageModel, stages.Overloaded, []prompt.Kind{prompt.KindCallback})
	fmt.Println(p.Text)
	fmt.Println(p.Offer)
	// Output:
	// I cannot answer that right now, because the system is busy. I have not started working on it. I can arrange for us to call you back. Would you like that?
	// [callback]
}
