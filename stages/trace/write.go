package trace

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
	"github.com/frontdoorhq/frontdoor/stages/internal/admit"
)

// Defaults of WriterOptions.
const (
	DefaultMaxBytes = 64 << 20
	DefaultBuffer   = 8192
	// MinMaxBytes is the smallest bound a Writer accepts: room for the
	// header lines and the end marker.
	MinMaxBytes = 4096
)

// endReserve is the room kept for the end marker under the size bound; the
// longest marker ({"op":"end","at":-9999999999.999999999,"reason":"max-bytes",
// "operations":18446744073709551615,"dropped":18446744073709551615}) is
// shorter.
const endReserve = 160

// ErrMaxBytes reports a WriterOptions.MaxBytes below MinMaxBytes.
var ErrMaxBytes = errors.New("trace: size bound too small")

// WriterOptions tune NewWriter. Zero values take the defaults.
type WriterOptions struct {
	// MaxBytes bounds the trace, end marker included (default
	// DefaultMaxBytes). When the next line would pass it, recording stops:
	// the end marker (reason "max-bytes") is written, one warning logged,
	// and later operations are counted as not recorded.
	MaxBytes int64
	// Buffer is how many operations wait for the writer (default
	// DefaultBuffer). When it is full an operation is dropped and counted,
	// never waited for; a "gap" line marks the place in its stage.
	Buffer int
	// Origin is the instant written as "at" 0 (default: the Clock's time
	// at NewWriter).
	Origin time.Time
	// Clock reads the time of records that carry none and of the end
	// marker at Close (default clock.System).
	Clock clock.Clock
	// Logger receives the one warning when the bound is reached and any
	// write error (default: discard).
	Logger *slog.Logger
}

// Writer records the operations of stages.Controllers as a trace: a bounded
// buffer in front of one goroutine that encodes them to w. Recording never
// blocks admission: a Controller's Recorder (Stage) only copies the
// operation into the buffer, or counts it dropped.
type Writer struct {
	opt    WriterOptions
	ch     chan entry
	done   chan struct{}
	exited chan struct{}
	once   sync.Once

	stopped    atomic.Bool // bound reached, write failed or closed: record nothing more
	dropped    atomic.Uint64
	notRecord  atomic.Uint64
	recorded   atomic.Uint64
	bytes      atomic.Int64
	reason     atomic.Value // string: why recording ended
	err        error        // the first write error; read after exited
	out        *bufio.Writer
	line       []byte
	lastSeq    map[*stageRecorder]uint64
	markerDone bool
}

type entry struct {
	st     *stageRecorder
	seq    uint64
	header bool
	op     admit.Operation
}

// Stats reports what a Writer did.
type Stats struct {
	Recorded    uint64 // operations written
	Dropped     uint64 // operations lost because the buffer was full
	NotRecorded uint64 // operations after recording ended (bound, error or Close)
	Bytes       int64  // bytes written
	Ended       string // why recording ended: "max-bytes", "error", "closed"; "" while it goes on
}

// NewWriter starts a Writer on w. It writes the "trace" line at once; Close
// ends it.
func NewWriter(w io.Writer, opt WriterOptions) (*Writer, error) {
	if opt.MaxBytes == 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.MaxBytes < MinMaxBytes {
		return nil, ErrMaxBytes
	}
	if opt.Buffer <= 0 {
		opt.Buffer = DefaultBuffer
	}
	opt.Clock = clock.Or(opt.Clock)
	if opt.Origin.IsZero() {
		opt.Origin = opt.Clock.Now()
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	tw := &Writer{opt: opt, ch: make(chan entry, opt.Buffer), done: make(chan struct{}), exited: make(chan struct{}),
		out: bufio.NewWriterSize(w, 64<<10), lastSeq: map[*stageRecorder]uint64{}}
	tw.reason.Store("")
	b := append(tw.line[:0], `{"op":"trace","version":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"started":`...)
	b = strconv.AppendQuote(b, opt.Origin.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"))
	b = append(b, `,"at":0}`+"\n"...)
	tw.emit(b)
	if err := tw.out.Flush(); err != nil {
		return nil, err
	}
	go tw.loop()
	return tw, nil
}

// Stage returns the Option that records one Controller as the stage name,
// with its limits and policy; dispatched says a admit.Dispatcher drives it
// (frontdoor serve's stages). The Option is for one Controller only. Its
// "stage" line is written before the controller's first operation.
func (w *Writer) Stage(name string, l stages.Limits, p stages.Policy, dispatched bool) stages.Option {
	st := &stageRecorder{w: w, name: name, limits: l, policy: p, dispatched: dispatched, at: w.opt.Clock.Now()}
	if !w.stopped.Load() {
		select {
		case w.ch <- entry{st: st, header: true}: // waits for room: a stage's line must not be lost
		case <-w.done:
		}
	}
	return admit.WithRecorder(st)
}

// Stats reports the writer's counts so far.
func (w *Writer) Stats() Stats {
	return Stats{Recorded: w.recorded.Load(), Dropped: w.dropped.Load(), NotRecorded: w.notRecord.Load(),
		Bytes: w.bytes.Load(), Ended: w.reason.Load().(string)}
}

// Close writes what is buffered and the end marker (reason "closed", unless
// recording had already ended), and stops the writer's goroutine. Later
// operations are counted as not recorded. It returns the first write
// error; it does not close the underlying writer.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.done) })
	<-w.exited
	return w.err
}

func (w *Writer) loop() {
	defer close(w.exited)
	for {
		select {
		case e := <-w.ch:
			w.write(e)
			if len(w.ch) == 0 {
				w.flush()
			}
		case <-w.done:
			w.stopped.Store(true) // later operations are not recorded; what is buffered is
			for {
				select {
				case e := <-w.ch:
					w.write(e)
					continue
				default:
				}
				break
			}
			w.end("closed", w.opt.Clock.Now())
			w.flush()
			return
		}
	}
}

// write encodes one entry, ending recording instead when it would pass the
// bound.
func (w *Writer) write(e entry) {
	if w.markerDone {
		if !e.header {
			w.notRecord.Add(1)
		}
		return
	}
	b := w.line[:0]
	if e.header {
		b = appendHeader(b, e.st, e.st.at.Sub(w.opt.Origin))
	} else {
		if last := w.lastSeq[e.st]; e.seq != last+1 {
			b = appendGap(b, e.st.name, e.seq-last-1, e.op.At.Sub(w.opt.Origin))
		}
		b = appendOp(b, e.st.name, e.op, w.opt.Origin)
	}
	w.line = b
	if len(b) > MaxLine { // cannot be read back: lost as if the buffer were full, and the next line says so
		w.dropped.Add(1)
		return
	}
	if w.bytes.Load()+int64(len(b))+endReserve > w.opt.MaxBytes {
		if !e.header {
			w.notRecord.Add(1)
		}
		w.stopped.Store(true)
		w.end("max-bytes", e.op.At)
		w.flush()
		w.opt.Logger.Warn("trace recording stopped: its size bound is reached; admission goes on unrecorded",
			"max_bytes", w.opt.MaxBytes, "bytes", w.bytes.Load(), "operations", w.recorded.Load(), "dropped", w.dropped.Load())
		return
	}
	w.emit(b)
	if !e.header {
		w.lastSeq[e.st] = e.seq
		w.recorded.Add(1)
	}
}

// end writes the end marker once.
func (w *Writer) end(reason string, t time.Time) {
	if w.markerDone {
		return
	}
	w.markerDone = true
	if t.IsZero() {
		t = w.opt.Clock.Now()
	}
	if w.reason.Load().(string) == "" {
		w.reason.Store(reason)
	}
	b := append(w.line[:0], `{"op":"end","at":`...)
	b = appendSeconds(b, t.Sub(w.opt.Origin))
	b = append(b, `,"reason":`...)
	b = strconv.AppendQuote(b, reason)
	b = append(b, `,"operations":`...)
	b = strconv.AppendUint(b, w.recorded.Load(), 10)
	b = append(b, `,"dropped":`...)
	b = strconv.AppendUint(b, w.dropped.Load(), 10)
	b = append(b, "}\n"...)
	w.line = b
	w.emit(b)
}

func (w *Writer) emit(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.out.Write(b); err != nil {
		w.fail(err)
		return
	}
	w.bytes.Add(int64(len(b)))
}

func (w *Writer) flush() {
	if w.err == nil {
		if err := w.out.Flush(); err != nil {
			w.fail(err)
		}
	}
}

func (w *Writer) fail(err error) {
	w.err = err
	w.stopped.Store(true)
	w.markerDone = true
	if w.reason.Load().(string) == "" {
		w.reason.Store("error")
	}
	w.opt.Logger.Error("trace recording stopped: write failed; admission goes on unrecorded", "err", err)
}

// stageRecorder is the admit.Recorder of one Controller.
type stageRecorder struct {
	w          *Writer
	name       string
	limits     stages.Limits
	policy     stages.Policy
	dispatched bool
	at         time.Time // when Stage was called
	seq        uint64    // under the controller's lock
}

// Record copies op into the writer's buffer, or counts it dropped when the
// buffer is full. It never waits.
func (s *stageRecorder) Record(op admit.Operation) {
	w := s.w
	if w.stopped.Load() {
		w.notRecord.Add(1)
		return
	}
	if op.At.IsZero() { // Close or Reopen before the controller was given any time
		op.At = w.opt.Clock.Now()
	}
	s.seq++
	select {
	case w.ch <- entry{st: s, seq: s.seq, op: op}:
	default:
		w.dropped.Add(1)
	}
}

func appendHeader(b []byte, st *stageRecorder, at time.Duration) []byte {
	b = append(b, `{"op":"stage","stage":`...)
	b = appendString(b, st.name)
	b = append(b, `,"slots":`...)
	b = strconv.AppendInt(b, int64(st.limits.Slots), 10)
	b = append(b, `,"waiting":`...)
	b = strconv.AppendInt(b, int64(st.limits.Waiting), 10)
	b = append(b, `,"max_age":`...)
	b = appendSeconds(b, st.limits.MaxAge)
	if st.limits.Order != admit.FIFO {
		b = appendField(b, "order", st.limits.Order.String())
	}
	if st.limits.TenantWaiting != 0 {
		b = append(b, `,"tenant_waiting":`...)
		b = strconv.AppendInt(b, int64(st.limits.TenantWaiting), 10)
	}
	if st.limits.Tombstones != 0 {
		b = append(b, `,"tombstones":`...)
		b = strconv.AppendInt(b, int64(st.limits.Tombstones), 10)
	}
	b = append(b, `,"policy":`...)
	b = appendString(b, st.policy.String())
	if st.dispatched {
		b = append(b, `,"dispatched":true`...)
	}
	b = append(b, `,"at":`...)
	b = appendSeconds(b, at)
	return append(b, "}\n"...)
}

func appendGap(b []byte, stage string, n uint64, at time.Duration) []byte {
	b = append(b, `{"op":"gap","stage":`...)
	b = appendString(b, stage)
	b = append(b, `,"dropped":`...)
	b = strconv.AppendUint(b, n, 10)
	b = append(b, `,"at":`...)
	b = appendSeconds(b, at)
	return append(b, "}\n"...)
}

func appendOp(b []byte, stage string, op admit.Operation, origin time.Time) []byte {
	b = append(b, `{"stage":`...)
	b = appendString(b, stage)
	b = append(b, `,"op":"`...)
	b = append(b, op.Op.String()...)
	b = append(b, '"')
	switch op.Op {
	case admit.OpOffer:
		b = appendField(b, "id", op.ID)
		b = appendField(b, "owner", op.Owner)
		b = append(b, `,"generation":`...)
		b = strconv.AppendUint(b, op.Generation, 10)
		b = append(b, `,"born":`...)
		b = appendSeconds(b, op.Born.Sub(origin))
		if !op.Deadline.IsZero() {
			b = append(b, `,"deadline":`...)
			b = appendSeconds(b, op.Deadline.Sub(origin))
		}
		if op.Tenant != "" {
			b = appendField(b, "tenant", op.Tenant)
		}
	case admit.OpTake:
		if op.ID != "" {
			b = appendField(b, "id", op.ID)
		}
	case admit.OpRelease, admit.OpCancel:
		b = appendField(b, "id", op.ID)
	case admit.OpRotate:
		b = appendField(b, "owner", op.Owner)
		b = append(b, `,"generation":`...)
		b = strconv.AppendUint(b, op.Generation, 10)
	case admit.OpForget:
		b = appendField(b, "owner", op.Owner)
	case admit.OpLimit:
		b = append(b, `,"slots":`...)
		b = strconv.AppendInt(b, int64(op.Slots), 10)
	}
	b = append(b, `,"at":`...)
	b = appendSeconds(b, op.At.Sub(origin))
	if op.Disposition != 0 {
		b = append(b, `,"disposition":"`...)
		b = append(b, op.Disposition.String()...)
		b = append(b, '"')
	}
	if op.Err != nil {
		b = appendField(b, "error", op.Err.Error())
	}
	return append(b, "}\n"...)
}

func appendField(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, v)
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
