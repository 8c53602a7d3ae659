package load

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// Report is what a run offered and what the callers got.
type Report struct {
	Config   ReportConfig `json:"config"`
	Started  time.Time    `json:"started"`
	Elapsed  Millis       `json:"elapsed_ms"`
	Warnings []string     `json:"warnings"`

	Generator Generator     `json:"generator"`
	Callers   CallerLedger  `json:"callers"`
	Turns     TurnLedger    `json:"turns"`
	Goodput   Goodput       `json:"goodput"`
	Stages    []StageCounts `json:"stages"` // per-disposition counts per stage, as the callers saw them
	QueueWait Percentiles   `json:"queue_wait"`
	ModelWait Percentiles   `json:"model_queue_wait"`
	SynthWait Percentiles   `json:"synthesis_queue_wait"`
	FirstTok  Percentiles   `json:"time_to_first_token"`
	FirstAud  Percentiles   `json:"time_to_first_audio"`
	// SentToAud is from the first text delta that ended a sentence to the
	// reply's first audio: what a streamed reply adds after the model
	// wrote its first sentence (synthesis and its wait).
	SentToAud Percentiles `json:"first_sentence_to_audio"`
	// Silence is, per reply, the longest time the caller heard nothing
	// between its first and last frame (played back from the first
	// frame's arrival): the gaps between a streamed reply's sentences.
	Silence  Percentiles     `json:"reply_silence"`
	Jitter   Percentiles     `json:"audio_jitter"` // |gap - frame_ms| between reply frames
	CPU      CPU             `json:"cpu"`
	Fallback FallbackResults `json:"fallback"`
	BargeIn  BargeIn         `json:"barge_in"`
	Server   ServerCheck     `json:"server"`
	Timeline Timeline        `json:"timeline"`
	Hist     Histograms      `json:"histograms"`
}

// Millis is a duration that encodes as fractional milliseconds.
type Millis time.Duration

// MarshalJSON implements json.Marshaler.
func (m Millis) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%.3f", float64(m)/1e6), nil
}

// UnmarshalJSON implements json.Unmarshaler, so that a JSON report reads
// back (to render it again).
func (m *Millis) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("load: milliseconds %s: %w", b, err)
	}
	*m = Millis(time.Duration(math.Round(v * 1e6)))
	return nil
}

// ReportConfig echoes the run's settings.
type ReportConfig struct {
	Target      string  `json:"target"`
	Dialect     Dialect `json:"dialect"`
	Callers     int     `json:"callers"`
	Rate        float64 `json:"rate"`
	Arrival     Arrival `json:"arrival"`
	BurstSize   int     `json:"burst_size,omitempty"`
	MaxActive   int     `json:"max_active"`
	Turns       int     `json:"turns"`
	Think       Millis  `json:"think_ms"`
	Spread      Millis  `json:"spread_ms,omitempty"`
	Hold        Millis  `json:"hold_ms"`
	Patience    Millis  `json:"patience_ms"`
	BargeIn     float64 `json:"barge_in"`
	Callback    float64 `json:"callback"`
	StreamAudio bool    `json:"stream_audio"`
	FrameMS     int     `json:"frame_ms"` // the callers' frame length (-frame-ms)
	Deadline    Millis  `json:"deadline_ms"`
	Duration    Millis  `json:"duration_ms"`
	Seed        uint64  `json:"seed"`
	Label       string  `json:"label,omitempty"`
	// Twilio only: each turn's speech, the quiet taken as admission, and
	// whether upgrades were signed.
	Utterance Millis `json:"utterance_ms,omitempty"`
	Settle    Millis `json:"settle_ms,omitempty"`
	Signed    bool   `json:"signed,omitempty"`
}

// frameMS is the frame length the jitter is measured against: 20 ms in a
// report that names none (written before -frame-ms).
func (c ReportConfig) frameMS() int {
	if c.FrameMS == 0 {
		return int(frame / time.Millisecond)
	}
	return c.FrameMS
}

// Generator reports whether the offered load was the load asked for.
type Generator struct {
	TargetRate   float64     `json:"target_rate"`
	AchievedRate float64     `json:"achieved_rate"` // offered callers over the span of actual arrivals
	Scheduled    int         `json:"scheduled"`
	Offered      int         `json:"offered"` // started dialing
	NotOffered   int         `json:"not_offered"`
	Lag          Percentiles `json:"lag"` // actual - scheduled arrival
	Behind       bool        `json:"behind"`
}

// CallerLedger is the conservation ledger of callers:
// Offered = RefusedBeforeRetention + Queued + Active + Terminal.
type CallerLedger struct {
	Offered                int            `json:"offered"`
	RefusedBeforeRetention int            `json:"refused_before_retention"`
	Queued                 int            `json:"queued"`
	Active                 int            `json:"active"`
	Terminal               int            `json:"terminal"`
	ByEnd                  map[string]int `json:"by_end"`
	Balanced               bool           `json:"balanced"`
	// Answered callers got an HTTP answer to their upgrade (Connected
	// ones completed it): none answered means the target is unreachable.
	Answered  int `json:"answered"`
	Connected int `json:"connected"`
	// Errors are the most frequent reasons callers ended in error.
	Errors []ErrorCount `json:"errors,omitempty"`
}

// ErrorCount is one reason callers ended in error and how many did.
type ErrorCount struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

// TurnLedger is the conservation ledger of turns, from the first stage that
// saw them: Offered = RefusedBeforeRetention + Queued + Active + Terminal.
type TurnLedger struct {
	Offered                int            `json:"offered"`
	RefusedBeforeRetention int            `json:"refused_before_retention"`
	Queued                 int            `json:"queued"`
	Active                 int            `json:"active"`
	Terminal               int            `json:"terminal"`
	ByEnd                  map[string]int `json:"by_end"` // turn_end dispositions (stage:disposition for refusals)
	Balanced               bool           `json:"balanced"`
}

// Goodput counts turns by when their first audio reached the caller.
type Goodput struct {
	Deadline Millis `json:"deadline_ms"`
	Good     int    `json:"good"` // first audio within the deadline
	Late     int    `json:"late"` // first audio after it: wasted work
	// Typed refusals the callers received (every refusal must be typed).
	Refused int `json:"refused"`
	// Untyped: turns that ended without a typed disposition.
	Untyped int `json:"untyped"`
	// CutMidReply: turns refused or failed after some of their reply was
	// heard (a later sentence of a streamed reply: "I lost the rest").
	CutMidReply int `json:"cut_mid_reply"`
	// GoodPerSecond is Good over the arrival window.
	GoodPerSecond float64 `json:"good_per_second"`
	Window        Millis  `json:"window_ms"`
	// Completed turns (turn_end completed, in time or late), and their
	// rate over the span from the first turn sent to the last completed:
	// with the stages kept busy, the measured capacity of the pipeline.
	Completed          int     `json:"completed"`
	CompletedPerSecond float64 `json:"completed_per_second"`
}

// StageCounts are the dispositions one stage gave, each counted once per
// identity (turn or caller).
type StageCounts struct {
	Stage        string         `json:"stage"`
	Offered      int            `json:"offered"`
	Dispositions map[string]int `json:"dispositions"`
	// RefusedAtOffer are the refusals before retention, by disposition;
	// ExpiredQueued left the queue too old.
	RefusedAtOffer map[string]int `json:"refused_at_offer"`
	ExpiredQueued  int            `json:"expired_queued"`
}

// Percentiles of a latency, in milliseconds.
type Percentiles struct {
	N   int    `json:"n"`
	P50 Millis `json:"p50_ms"`
	P95 Millis `json:"p95_ms"`
	P99 Millis `json:"p99_ms"`
	Max Millis `json:"max_ms"`
}

// FallbackResults are the prompts and callback offers callers got.
type FallbackResults struct {
	Prompts          map[string]int `json:"prompts"`             // by reason
	PromptFrames     int            `json:"prompt_audio_frames"` // the prompts' speech (not goodput)
	CallbackOffered  int            `json:"callback_offered"`
	CallbackAccepted int            `json:"callback_accepted"`
	CallbackReplies  map[string]int `json:"callback_replies"`
}

// BargeIn is what barge-ins did.
type BargeIn struct {
	Sent        int         `json:"sent"`
	Interrupted int         `json:"interrupted"` // `interrupted` received
	StaleAfter  int         `json:"stale_after_interrupted"`
	Latency     Percentiles `json:"latency"` // barge_in sent -> interrupted received
}

// ServerCheck compares the server's stage ledgers (before and after the
// run) with what the callers saw.
type ServerCheck struct {
	Error   string        `json:"error,omitempty"`
	Stages  []StageCheck  `json:"stages"`
	Matches bool          `json:"matches"`
	BargeIn BargeInMetric `json:"barge_in_last_old_write"`
}

// StageCheck is one stage's ledger delta beside the callers' view.
type StageCheck struct {
	Stage    string `json:"stage"`
	Delta    Ledger `json:"delta"`
	Balanced bool   `json:"balanced"` // the server's ledger balances after the run
	Leased   int    `json:"leased_after"`
	Queued   int    `json:"queued_after"`
	// The callers' counts of the same transitions.
	Client   Ledger   `json:"client"`
	Mismatch []string `json:"mismatch,omitempty"`
}

// Timeline counts events in equal bins from the start.
type Timeline struct {
	Bin  Millis `json:"bin_ms"`
	Bins []Bin  `json:"bins"`
}

// Bin is one interval of the timeline (turns, except Arrived: callers).
type Bin struct {
	T         Millis `json:"t_ms"`
	Arrived   int    `json:"arrived"`
	Offered   int    `json:"offered"`
	Admitted  int    `json:"admitted"`
	Expired   int    `json:"expired"`
	Refused   int    `json:"refused"`
	Completed int    `json:"completed"`
	Good      int    `json:"good"`
	Late      int    `json:"late"`
}

// Histograms of latencies in fixed millisecond buckets.
type Histograms struct {
	BucketMS  float64 `json:"bucket_ms"`
	FirstAud  []int   `json:"time_to_first_audio"`
	QueueWait []int   `json:"queue_wait"`
}

func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) Millis {
		i := int(p*float64(len(s))+0.999999) - 1
		return Millis(s[min(max(i, 0), len(s)-1)])
	}
	return Percentiles{N: len(s), P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: Millis(s[len(s)-1])}
}
