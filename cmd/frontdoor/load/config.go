package load

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Arrival is how callers arrive.
type Arrival string

// Arrival processes.
const (
	// Poisson: independent arrivals at Rate per second on average.
	Poisson Arrival = "poisson"
	// Burst: BurstSize callers at once, bursts spaced to average Rate.
	Burst Arrival = "burst"
	// Steady: evenly spaced arrivals at exactly Rate per second.
	Steady Arrival = "steady"
)

// Dialect is the wire protocol the callers speak.
type Dialect string

// Dialects.
const (
	// Native speaks GET /v1/session (docs/PROTOCOL.md): text turns, JSON
	// events, binary reply audio.
	Native Dialect = "native"
	// Twilio speaks GET /v1/twilio as a Twilio Media Streams gateway would
	// (docs/TELEPHONY.md): connected and start, then 20 ms µ-law media in
	// real time. A turn is speech-like audio followed by silence; replies
	// are media followed by a mark, which the caller echoes once played;
	// a barge-in is speech over a reply, answered by clear.
	Twilio Dialect = "twilio"
	// SIP places real SIP calls to the server's -sip-listen address
	// (Config.SIPTarget) with RTP both ways, and talks as a Twilio caller
	// does (sipCaller says what it reads from the RTP instead of marks).
	SIP Dialect = "sip"
)

// Limits of one run: a run is bounded in count and time.
const (
	MaxCallers  = 100000
	MaxDuration = time.Hour
	// MaxUtterance bounds a Twilio turn's speech, below the server's cut
	// of one utterance (30 s).
	MaxUtterance = 20 * time.Second
	// MaxFrameMS is the longest frame a native caller asks for
	// (docs/PROTOCOL.md, hello.audio.frame_ms).
	MaxFrameMS = 120
)

// Errors of Config validation. Their messages name the frontdoor load flag
// of each field (-callers for Callers).
var (
	ErrRemoteTarget = errors.New("load: target is not a loopback address (-allow-remote loads another host)")
	ErrBadConfig    = errors.New("load: bad config")
	// ErrUnreachable: nothing accepts a connection at the target, found
	// before any caller is offered (within ReachTimeout).
	ErrUnreachable = errors.New("load: target unreachable")
)

// ReachTimeout bounds the check that the target accepts connections, so
// a closed port or an unroutable host is reported at once rather than
// after every caller has tried.
const ReachTimeout = 2 * time.Second

// Config describes one run. Zero values take the defaults noted.
type Config struct {
	// Target is the server's base URL (http://127.0.0.1:8080 or ws://...).
	Target string
	// AllowRemote permits a target that is not a loopback address.
	AllowRemote bool
	// Dialect of the callers (zero: Native).
	Dialect Dialect

	// Callers is the number of callers offered (1..MaxCallers).
	Callers int
	// Rate is the arrival rate in callers per second (> 0).
	Rate float64
	// Arrival is the arrival process (zero: Poisson).
	Arrival Arrival
	// BurstSize is the callers per burst (Burst only; 0: 10).
	BurstSize int
	// MaxActive bounds the callers connected at once (0: Callers). When it
	// is reached, arrivals wait, and the wait shows as generator lag.
	MaxActive int

	// Turns is the number of turns each admitted caller speaks (0: none,
	// the caller holds the line for Hold and hangs up).
	Turns int
	// Think is the mean think time between turns (exponential).
	Think time.Duration
	// Spread delays each caller's first turn by a uniformly random time in
	// [0, Spread) after its admission (0: at once). With every caller
	// arriving first (a burst), their first turns then fall across the
	// spread as a Poisson-like process of Callers/Spread a second, on
	// calls that are all already on the line.
	Spread time.Duration
	// Hold is how long a caller stays on the line after its last turn.
	Hold time.Duration
	// Patience is how long a caller waits for a turn's end before it hangs
	// up (0: until the run ends).
	Patience time.Duration
	// BargeIn is the probability in [0,1] that a caller barges in during a
	// reply, BargeAfter (uniformly 0..BargeAfter) after its first audio.
	BargeIn    float64
	BargeAfter time.Duration
	// Callback is the probability in [0,1] that a caller accepts a
	// callback when the server offers one (native only: the Twilio wire
	// carries no offer).
	Callback float64
	// StreamAudio makes admitted callers send PCM16 frames of caller
	// audio (of FrameMS each) while on the line (both directions
	// streaming). Twilio callers always stream.
	StreamAudio bool
	// FrameMS is the frame length of a native caller's audio, in ms
	// (0: 20; 20 to MaxFrameMS, a multiple of 20): it asks for reply
	// frames that long in its hello (hello.audio.frame_ms), streams its
	// own audio in frames that long, and the reply's jitter is each
	// gap's distance from it. The Twilio and SIP wires are 20 ms.
	FrameMS int
	// Text is what each turn says (native only; zero: a short question).
	Text string

	// Utterance is how long each turn's synthetic speech lasts (Twilio
	// only; 0: 800ms). The server hears the turn when 500 ms of quiet
	// have followed it.
	Utterance time.Duration
	// Settle is how long a Twilio caller listens after start before it
	// speaks (0: 500ms). The Twilio wire has no admission message: a caller
	// that hears nothing in that time takes itself as admitted, and one
	// that hears audio first takes it as the queue or refusal prompt.
	Settle time.Duration
	// APIKey, when set, is sent on each native caller's upgrade as
	// Authorization: Bearer (the server's -auth apikey): the callers are
	// the tenant it names, so that two generators run as two tenants.
	APIKey string
	// TwilioAuthToken, when set, signs each Twilio upgrade with
	// X-Twilio-Signature, as Twilio does (the server's -twilio-auth-token).
	TwilioAuthToken string
	// TwilioURL is the stream URL the signature covers, exactly as the
	// server's -twilio-public-url (zero: the ws:// URL dialed).
	TwilioURL string
	// SIPTarget is the server's SIP address (ip:port, its -sip-listen)
	// that SIP callers dial as sip:load@SIPTarget (zero: the target's
	// host, port 5060).
	SIPTarget string
	// SIPUser and SIPPassword answer the server's digest challenge (its
	// -sip-auth-file), when set.
	SIPUser, SIPPassword string

	// Deadline is the useful deadline: a turn is goodput when its first
	// audio reaches the caller within Deadline of sending it (0: 2s).
	Deadline time.Duration
	// Duration bounds the run: at Duration every caller still on the line
	// hangs up and the run ends (0: 1 minute; at most MaxDuration).
	Duration time.Duration
	// Seed makes arrivals and caller choices reproducible (0: 1).
	Seed uint64
	// LagTolerance is the arrival lag above which the generator reports
	// that it fell behind (0: 20ms).
	LagTolerance time.Duration

	// ServerPID, when set, is the process id of a server on this machine:
	// its CPU time is read from /proc/PID/stat instead of its /metrics.
	ServerPID int

	// Progress, if set, is called about five times a second while the run
	// goes on, and once at its end.
	Progress func(Progress)
	// HTTPClient dials the WebSockets and reads /v1/stages (nil: a client
	// of its own).
	HTTPClient *http.Client
}

// Progress is the state of a run in progress.
type Progress struct {
	Elapsed   time.Duration `json:"elapsed_ns"`
	Duration  time.Duration `json:"duration_ns"`
	Scheduled int           `json:"scheduled"` // callers whose arrival time has come
	Offered   int           `json:"offered"`   // callers that started dialing
	Callers   int           `json:"callers"`   // of the run
	Active    int           `json:"active"`    // on the line now
	Done      int           `json:"done"`
	Good      int           `json:"good"` // turns with first audio within the deadline
	Turns     int           `json:"turns"`
	Lag       time.Duration `json:"lag_ns"` // the latest arrival's lag
	Final     bool          `json:"final"`
}

func (c Config) withDefaults() Config {
	if c.Dialect == "" {
		c.Dialect = Native
	}
	if c.Arrival == "" {
		c.Arrival = Poisson
	}
	if c.BurstSize <= 0 {
		c.BurstSize = 10
	}
	if c.MaxActive <= 0 {
		c.MaxActive = c.Callers
	}
	if c.Text == "" {
		c.Text = "what time does the pharmacy open tomorrow"
	}
	if c.Deadline <= 0 {
		c.Deadline = 2 * time.Second
	}
	if c.Duration <= 0 {
		c.Duration = time.Minute
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.LagTolerance <= 0 {
		c.LagTolerance = 20 * time.Millisecond
	}
	if c.BargeAfter <= 0 {
		c.BargeAfter = 200 * time.Millisecond
	}
	if c.Utterance <= 0 {
		c.Utterance = 800 * time.Millisecond
	}
	if c.Settle <= 0 {
		c.Settle = 500 * time.Millisecond
	}
	if c.FrameMS == 0 {
		c.FrameMS = int(frame / time.Millisecond)
	}
	return c
}

// frameLen is the length of the callers' frames (FrameMS).
func (c Config) frameLen() time.Duration { return time.Duration(c.FrameMS) * time.Millisecond }

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	switch {
	case c.Callers < 1 || c.Callers > MaxCallers:
		return bad("-callers %d: want 1 to %d", c.Callers, MaxCallers)
	case !(c.Rate > 0) || c.Rate > 1e6:
		return bad("-rate %v: want more than 0 and at most 1e6 callers per second", c.Rate)
	case c.Duration > MaxDuration:
		return bad("-duration %v: want at most %v", c.Duration, MaxDuration)
	case c.Turns < 0 || c.Turns > 1000:
		return bad("-turns %d: want 0 to 1000", c.Turns)
	case c.BargeIn < 0 || c.BargeIn > 1:
		return bad("-barge-in %v: want a probability from 0 to 1", c.BargeIn)
	case c.Callback < 0 || c.Callback > 1:
		return bad("-callback %v: want a probability from 0 to 1", c.Callback)
	case c.Think < 0:
		return bad("-think %v: must not be negative", c.Think)
	case c.Spread < 0:
		return bad("-spread %v: must not be negative", c.Spread)
	case c.Hold < 0:
		return bad("-hold %v: must not be negative", c.Hold)
	case c.Patience < 0:
		return bad("-patience %v: must not be negative", c.Patience)
	case c.Dialect != Native && c.Dialect != Twilio && c.Dialect != SIP:
		return bad("-protocol %q: want %q, %q or %q", c.Dialect, Native, Twilio, SIP)
	case c.Utterance > MaxUtterance:
		return bad("-utterance %v: want at most %v", c.Utterance, MaxUtterance)
	case c.Arrival != Poisson && c.Arrival != Burst && c.Arrival != Steady:
		return bad("-arrival %q: want poisson, burst or steady", c.Arrival)
	case c.FrameMS < 20 || c.FrameMS > MaxFrameMS || c.FrameMS%20 != 0:
		return bad("-frame-ms %d: want a multiple of 20 from 20 to %d", c.FrameMS, MaxFrameMS)
	case c.Dialect != Native && c.FrameMS != 20:
		return bad("-frame-ms %d: -protocol %s frames are 20 ms", c.FrameMS, c.Dialect)
	}
	return nil
}

// endpoints returns the HTTP base URL and the WebSocket URL of the
// dialect's endpoint at target, refusing a non-loopback host unless
// allowRemote.
func endpoints(target string, d Dialect, allowRemote bool) (base, ws string, err error) {
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", "", fmt.Errorf("%w: -target: %v", ErrBadConfig, err)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "http"
	case "https", "wss":
		u.Scheme = "https"
	default:
		return "", "", fmt.Errorf("%w: -target scheme %q: want http, https, ws or wss", ErrBadConfig, u.Scheme)
	}
	if !allowRemote && !isLoopback(u.Hostname()) {
		return "", "", fmt.Errorf("-target %q: %w", u.Host, ErrRemoteTarget)
	}
	u.Path, u.RawQuery, u.Fragment = "", "", ""
	base = u.String()
	w := *u
	w.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	w.Path = "/v1/session"
	if d == Twilio {
		w.Path = "/v1/twilio"
	}
	return base, w.String(), nil
}

// isLoopback reports whether host names this machine's loopback without a
// resolver: localhost or a loopback IP literal.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
