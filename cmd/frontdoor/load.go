package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
)

const loadUsage = `Usage: frontdoor load [flags]

Offers synthetic callers to a running server (-target), each speaking -turns
turns, and reports what they got: a summary on stdout, -json and -html
reports on request. It exits 1 with a one-line reason when the target is
unreachable, every caller failed, or a ledger does not balance (a run in
which the server refused callers is a measurement and exits 0).
`

// loadSettings are the flags of frontdoor load.
type loadSettings struct {
	cfg     load.Config
	arrival string
	jsonOut string
	htmlOut string
	label   string
	quiet   bool
	config  string
	cpuProf string
}

func loadFlags(fs *flag.FlagSet) *loadSettings {
	s := &loadSettings{}
	c := &s.cfg
	fs.StringVar(&c.Target, "target", "http://127.0.0.1:8080", "server base URL (loopback only unless -allow-remote)")
	fs.BoolVar(&c.AllowRemote, "allow-remote", false, "allow a target that is not a loopback address")
	fs.IntVar(&c.Callers, "callers", 100, fmt.Sprintf("callers to offer (at most %d)", load.MaxCallers))
	fs.Float64Var(&c.Rate, "rate", 10, "arrival rate, callers per second")
	fs.StringVar(&s.arrival, "arrival", "poisson", "arrival process: poisson, burst or steady")
	fs.IntVar(&c.BurstSize, "burst", 10, "callers per burst (-arrival burst)")
	fs.IntVar(&c.MaxActive, "max-active", 0, "most callers on the line at once (0: -callers); arrivals beyond it wait and show as lag")
	fs.IntVar(&c.Turns, "turns", 3, "turns each admitted caller speaks")
	fs.DurationVar(&c.Think, "think", 500*time.Millisecond, "mean think time between turns (exponential)")
	fs.DurationVar(&c.Spread, "spread", 0, "-protocol native: each caller's first turn waits a uniformly random time up to this long after its admission (with -arrival burst: every call on the line first, then turns spread over this window)")
	fs.DurationVar(&c.Hold, "hold", 0, "time a caller stays on the line after its last turn")
	fs.DurationVar(&c.Patience, "patience", 0, "a caller hangs up when a turn has not ended after this long (0: wait)")
	fs.Float64Var(&c.BargeIn, "barge-in", 0.1, "probability that a caller barges in during a reply")
	fs.DurationVar(&c.BargeAfter, "barge-after", 200*time.Millisecond, "a barge-in comes up to this long after the reply's first audio")
	fs.Float64Var(&c.Callback, "callback", 0.5, "probability that a caller accepts an offered callback")
	fs.BoolVar(&c.StreamAudio, "stream-audio", false, "callers send frames of audio (-frame-ms each) while on the line (-protocol native; Twilio callers always do)")
	fs.IntVar(&c.FrameMS, "frame-ms", 20, fmt.Sprintf("-protocol native: the callers' frame length in ms, 20 to %d in steps of 20: "+
		"their hello asks for reply frames that long (hello.audio.frame_ms), -stream-audio sends frames that long, and reply jitter is |gap - frame-ms|", load.MaxFrameMS))
	fs.StringVar(&c.Text, "text", "", "what each turn says (-protocol native)")
	fs.StringVar((*string)(&c.Dialect), "protocol", string(load.Native),
		"what the callers speak: native (GET /v1/session, text turns), twilio (GET /v1/twilio as a Twilio Media Streams gateway: "+
			"20 ms µ-law media in real time, a turn is synthetic speech then silence, marks echoed once played, barge-in is speech over a reply; "+
			"the server needs a recognizer) or sip (real SIP calls to -sip-target with RTP both ways, talking as twilio callers do)")
	fs.DurationVar(&c.Utterance, "utterance", 800*time.Millisecond, "-protocol twilio or sip: how long each turn's speech lasts")
	fs.DurationVar(&c.Settle, "settle", 500*time.Millisecond, "-protocol twilio or sip: a caller that hears nothing this long after start takes itself as admitted (the wire has no admission message)")
	fs.StringVar(&c.APIKey, "api-key", "", "-protocol native: send this key as Authorization: Bearer on each upgrade (the server's -auth apikey): the callers are its tenant")
	fs.StringVar(&c.TwilioAuthToken, "twilio-auth-token", "", "-protocol twilio: sign each upgrade with X-Twilio-Signature using this auth token (the server's -twilio-auth-token; or FRONTDOOR_TWILIO_AUTH_TOKEN)")
	fs.StringVar(&c.TwilioURL, "twilio-url", "", "-protocol twilio: the stream URL the signature covers, as the server's -twilio-public-url (default: the ws:// URL dialed)")
	fs.StringVar(&c.SIPTarget, "sip-target", "", "-protocol sip: the server's -sip-listen address, dialed as sip:load@ADDR (default: the -target host, port 5060)")
	fs.StringVar(&c.SIPUser, "sip-user", "", "-protocol sip: the user name answered to a digest challenge (a user of the server's -sip-auth-file)")
	fs.StringVar(&c.SIPPassword, "sip-password", "", "-protocol sip: its password (or FRONTDOOR_SIP_PASSWORD)")
	fs.DurationVar(&c.Deadline, "deadline", 2*time.Second, "useful deadline: a turn is goodput if its first audio arrives within it")
	fs.DurationVar(&c.Duration, "duration", time.Minute, fmt.Sprintf("the run ends by itself after this long (at most %v)", load.MaxDuration))
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of arrivals and caller choices")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "process id of the server when it runs on this machine: its CPU per call-second is read from /proc/PID/stat (default: its /metrics process_cpu_seconds_total)")
	fs.DurationVar(&c.LagTolerance, "lag-tolerance", 20*time.Millisecond, "arrival lag above which the generator reports it fell behind")
	fs.StringVar(&s.jsonOut, "json", "", "write the JSON report to this file")
	fs.StringVar(&s.htmlOut, "html", "", "write the self-contained HTML report to this file")
	fs.StringVar(&s.label, "label", "", "a label for the report (e.g. the server's policy)")
	fs.BoolVar(&s.quiet, "quiet", false, "no progress bar")
	fs.StringVar(&s.config, "config", "", "optional config file of name = value lines")
	fs.StringVar(&s.cpuProf, "cpuprofile", "", "write a CPU profile (go tool pprof) of the generator's run to this file")
	return s
}

// runLoad offers synthetic callers to a frontdoor server and reports what
// they got: a summary on stdout, JSON and HTML reports on request, and a
// progress bar on stderr when it is a terminal.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := loadFlags(fs)
	fs.Usage = commandUsage(stderr, fs, loadUsage)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q (load takes only flags)", fs.Args())}
	}
	s.cfg.Arrival = load.Arrival(s.arrival)
	var bar *progressBar
	if !s.quiet && isTerminal(stderr) {
		bar = &progressBar{w: stderr}
		s.cfg.Progress = bar.update
	}
	if s.cpuProf != "" {
		stop, err := startCPUProfile(s.cpuProf)
		if err != nil {
			return err
		}
		defer stop()
	}
	r, err := load.Run(ctx, s.cfg)
	switch {
	case errors.Is(err, load.ErrRemoteTarget) && strings.HasPrefix(err.Error(), "-sip-target"):
		return usageError{fmt.Errorf("-sip-target %s is not a loopback address; add -allow-remote to load another host", s.cfg.SIPTarget)}
	case errors.Is(err, load.ErrRemoteTarget):
		return usageError{fmt.Errorf("-target %s is not a loopback address; add -allow-remote to load another host", s.cfg.Target)}
	case errors.Is(err, load.ErrUnreachable):
		why := strings.TrimPrefix(err.Error(), load.ErrUnreachable.Error()+": ")
		return fmt.Errorf("target %s unreachable: %s (is frontdoor serve running there?)", s.cfg.Target, why)
	case errors.Is(err, load.ErrBadConfig): // its message names the flag
		return usageError{errors.New(strings.TrimPrefix(err.Error(), load.ErrBadConfig.Error()+": "))}
	}
	if err != nil {
		return err
	}
	r.Config.Label = s.label
	if bar != nil {
		bar.done()
	}
	if _, err := io.WriteString(stdout, r.Summary()); err != nil {
		return err
	}
	if s.jsonOut != "" {
		if err := writeReport(s.jsonOut, r.WriteJSON); err != nil {
			return err
		}
	}
	if s.htmlOut != "" {
		if err := writeReport(s.htmlOut, r.WriteHTML); err != nil {
			return err
		}
	}
	if why := r.Failure(); why != "" {
		return errors.New(why)
	}
	return nil
}

func writeReport(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.Close()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar draws one line, redrawn in place.
type progressBar struct {
	mu sync.Mutex
	w  io.Writer
}

func (b *progressBar) update(p load.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	const width = 30
	frac := 0.0
	if p.Callers > 0 {
		frac = float64(p.Done) / float64(p.Callers)
	}
	if t := float64(p.Elapsed) / float64(p.Duration); t > frac && p.Duration > 0 {
		frac = min(t, 1)
	}
	n := int(frac * width)
	fmt.Fprintf(b.w, "\r[%s%s] %3.0f%% %5.1fs offered %d/%d on line %d done %d turns %d good %d lag %v   ",
		strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100, p.Elapsed.Seconds(),
		p.Offered, p.Callers, p.Active, p.Done, p.Turns, p.Good, p.Lag.Round(time.Millisecond))
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintln(b.w)
}
