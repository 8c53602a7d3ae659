package load

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// CPU is what the run cost in processor time, per second of call: the
// server's and the generator's, so that a media-path change shows in one
// figure (issue 16's targets are per call-second of two-way audio).
type CPU struct {
	// CallSeconds is the sum over admitted callers of their time on the
	// line, from admission until the caller hung up or was cut.
	CallSeconds float64 `json:"call_seconds"`
	// ReplyAudioSeconds is the reply audio the callers received (by the
	// bytes of each frame, at its audio_start's encoding and rate; 20 ms a
	// frame on the Twilio and SIP wires). On a machine that keeps time it is close to the call-seconds
	// spent in replies; when the server or the generator falls behind,
	// calls stretch and per call-second figures flatter the run, while per
	// audio-second figures do not.
	ReplyAudioSeconds float64 `json:"reply_audio_seconds"`
	// Frames is, with -stream-audio on the native protocol, the binary
	// audio frames moved: those the callers received (replies and
	// prompts) and those they streamed. Each frame is one write by one
	// process and one read by the other, so CPU per frame compares with
	// a bare relay's (docs/BENCHMARKS.md, the floor) whatever the calls'
	// pace. 0 otherwise.
	Frames    int64      `json:"frames,omitempty"`
	Server    ProcessCPU `json:"server"`
	Generator ProcessCPU `json:"generator"`
}

// ProcessCPU is one process's CPU time (user + system) over the run.
type ProcessCPU struct {
	Seconds float64 `json:"cpu_seconds"`
	// PerCallSecond is Seconds over CPU.CallSeconds, in milliseconds.
	PerCallSecond float64 `json:"ms_per_call_second"`
	// PerAudioSecond is Seconds over CPU.ReplyAudioSeconds, in milliseconds.
	PerAudioSecond float64 `json:"ms_per_reply_audio_second"`
	// PerFrame is Seconds over CPU.Frames, in microseconds (0: no frames
	// counted).
	PerFrame float64 `json:"us_per_frame,omitempty"`
	// Source says where the figure was read: /proc/PID/stat (-server-pid),
	// the server's /metrics process_cpu_seconds_total, or the generator's
	// own rusage.
	Source string `json:"source,omitempty"`
	// Missing says why there is no figure.
	Missing string `json:"missing,omitempty"`
}

// cpuReading is a process's cumulative CPU time at one moment.
type cpuReading struct {
	seconds float64
	source  string
	err     error
}

// serverCPU reads the server's cumulative CPU time: from /proc when its
// process id is given (10 ms resolution, no help from the server), else
// from the process collector's counter in its /metrics scrape.
func serverCPU(pid int, m scrape) cpuReading {
	if pid > 0 {
		s, err := procCPU(pid)
		return cpuReading{seconds: s, source: fmt.Sprintf("/proc/%d/stat", pid), err: err}
	}
	if !m.hasCPU {
		return cpuReading{err: fmt.Errorf("no process_cpu_seconds_total on /metrics (give -server-pid for a local server)")}
	}
	return cpuReading{seconds: m.cpu, source: "/metrics process_cpu_seconds_total"}
}

// procCPU reads utime + stime of process pid from /proc/PID/stat (Linux).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s, err := parseStat(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return s, nil
}

// parseStat returns utime + stime in seconds from the text of a
// /proc/PID/stat.
func parseStat(b []byte) (float64, error) {
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields counted from 3 start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields", len(f))
	}
	utime, err1 := strconv.ParseUint(string(f[11]), 10, 64) // field 14
	stime, err2 := strconv.ParseUint(string(f[12]), 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q stime %q", f[11], f[12])
	}
	// /proc counts in USER_HZ, 100 a second on every Linux architecture Go
	// supports (the kernel converts from its own HZ).
	return float64(utime+stime) / 100, nil
}

func (r cpuReading) delta(before cpuReading, callSeconds, audioSeconds float64, frames int64) ProcessCPU {
	switch {
	case before.err != nil:
		return ProcessCPU{Missing: before.err.Error()}
	case r.err != nil:
		return ProcessCPU{Missing: r.err.Error()}
	}
	p := ProcessCPU{Seconds: r.seconds - before.seconds, Source: r.source}
	if callSeconds > 0 {
		p.PerCallSecond = 1000 * p.Seconds / callSeconds
	}
	if audioSeconds > 0 {
		p.PerAudioSecond = 1000 * p.Seconds / audioSeconds
	}
	if frames > 0 {
		p.PerFrame = 1e6 * p.Seconds / float64(frames)
	}
	return p
}

// callSeconds sums admitted callers' time on the line.
func callSeconds(recs []*callerRec) float64 {
	var d time.Duration
	for _, c := range recs {
		if !c.admitted.IsZero() && c.left.After(c.admitted) {
			d += c.left.Sub(c.admitted)
		}
	}
	return d.Seconds()
}

// framesReceived is the binary audio frames the callers received:
// replies' and prompts'.
func framesReceived(recs []*callerRec) int64 {
	var n int64
	for _, c := range recs {
		n += int64(c.promptFrames)
		for _, t := range c.turns {
			n += int64(t.frames)
		}
	}
	return n
}

// replyAudioSeconds is the reply audio the callers received, prompts not
// counted.
func replyAudioSeconds(recs []*callerRec) float64 {
	var d time.Duration
	for _, c := range recs {
		for _, t := range c.turns {
			d += t.audio
		}
	}
	return d.Seconds()
}

func (p ProcessCPU) String() string {
	if p.Missing != "" {
		return "unknown (" + p.Missing + ")"
	}
	s := fmt.Sprintf("%.2f ms per call-second, %.2f per reply-audio second", p.PerCallSecond, p.PerAudioSecond)
	if p.PerFrame > 0 {
		s += fmt.Sprintf(", %.1f µs per frame", p.PerFrame)
	}
	return s + fmt.Sprintf(" (%.2f s, %s)", p.Seconds, p.Source)
}
