package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/media/g711"
	"github.com/frontdoorhq/frontdoor/media/pace"
	"github.com/pion/rtp"
)

// Errors of a call's media.
var (
	// ErrEnded reports audio written to, or DTMF sent on, a call that has ended.
	ErrEnded = errors.New("sip: call ended")
	// ErrNoTelephoneEvent reports SendDigit on a call whose peer did not
	// accept RFC 4733 telephone-event in its SDP.
	ErrNoTelephoneEvent = errors.New("sip: peer does not take telephone-event")
)

const (
	frameSamples = 160 // 20 ms at 8 kHz
	framePeriod  = 20 * time.Millisecond
	maxPacket    = 1500 // bytes read per datagram; larger ones are truncated and dropped
	frameQueue   = 50   // received frames kept for a slow reader (1 s); the oldest go first
	digitQueue   = 32
)

// Frame is one received RTP packet of audio.
type Frame struct {
	SSRC      uint32
	Seq       uint16
	Timestamp uint32
	Marker    bool    // the first packet of a talkspurt
	Payload   []byte  // as received, in the call's Codec
	PCM       []int16 // Payload decoded to 16-bit linear PCM at 8 kHz
}

// MediaStats counts what a call's RTP carried.
type MediaStats struct {
	PacketsIn  uint64 // RTP packets accepted from the peer
	PacketsOut uint64 // RTP packets sent (audio and telephone-event)
	// AudioOut is how much audio has been sent: what a barge-in's "heard"
	// is estimated from (sent is not yet played; see Drain).
	AudioOut      time.Duration
	FramesDropped uint64 // received frames dropped because Frames was not read
	Ignored       uint64 // datagrams from elsewhere, not RTP, or of another payload type
	// Foreign counts the datagrams from anywhere but the call's source
	// (dropped; also in Ignored).
	Foreign uint64
	// Withheld counts the RTP packets not sent because the peer's SDP
	// address had not yet proven it wants them.
	Withheld uint64
	Digits   uint64 // DTMF digits decoded
	Pace     pace.Stats
}

// Media is the RTP side of an established call: received audio and digits,
// and outbound audio released at 20 ms intervals. Its methods may be called
// from any goroutine.
type Media struct {
	codec   Codec
	eventPT int
	conn    *net.UDPConn
	remote  netip.AddrPort // the address in the peer's SDP
	peer    mediaPeer
	sendTo  atomic.Pointer[netip.AddrPort] // nil: nothing is sent yet
	heard   atomic.Int64                   // peer.now() of the last packet accepted, UnixNano; 0: none
	log     *slog.Logger

	frames chan Frame
	digits chan rune
	pacer  *pace.Pacer

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	sendMu  sync.Mutex // serializes packets and Clear
	seq     uint16
	ssrc    uint32
	tsBase  uint32
	start   time.Time
	lastTS  uint32
	lastDue time.Time
	sent    bool

	drainMu sync.Mutex
	drains  map[string]chan struct{}
	drainN  uint64

	in, out, audio, dropped, ignored, ndigits, foreign, withheld atomic.Uint64
}

// mediaPeer says whom a call's RTP may go to and come from, beyond the
// address in the peer's SDP.
type mediaPeer struct {
	// trusted: send to the SDP address from the start (Dial: the caller
	// chose the server it sends to).
	trusted bool
	// signal is the address the call's signalling came from. Its ACK
	// carried the tag of our answer, so it receives what is sent to it:
	// RTP goes at once to an SDP address on that host, and a peer whose
	// SDP names another address (a private one behind NAT) may latch
	// RTP from that host (symmetric RTP).
	signal netip.Addr
	now    func() time.Time // stamps LastHeard; nil: clock.System's
	count  *counters        // the server's, also counted; may be nil
}

// newMedia starts the call's RTP on conn, with the peer at remote (its
// SDP address); close ends it.
func newMedia(conn *net.UDPConn, remote netip.AddrPort, codec Codec, eventPT int, peer mediaPeer, log *slog.Logger) *Media {
	ctx, cancel := context.WithCancel(context.Background())
	if peer.now == nil {
		peer.now = clock.System.Now
	}
	peer.signal = peer.signal.Unmap()
	m := &Media{
		codec:   codec,
		eventPT: eventPT,
		conn:    conn,
		remote:  netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()),
		peer:    peer,
		log:     log,
		frames:  make(chan Frame, frameQueue),
		digits:  make(chan rune, digitQueue),
		pacer:   pace.New(pace.Config{FrameBytes: frameSamples, Fill: codec.silence()}),
		cancel:  cancel,
		done:    make(chan struct{}),
		seq:     uint16(rand.Uint32()),
		ssrc:    rand.Uint32(),
		tsBase:  rand.Uint32(),
		start:   clock.System.Now(), // RTP timestamps keep real time
		drains:  map[string]chan struct{}{},
	}
	if peer.trusted || m.remote.Addr() == peer.signal {
		dst := m.remote
		m.sendTo.Store(&dst)
	}
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		m.receive()
	}()
	go func() {
		defer m.wg.Done()
		_ = m.pacer.Run(ctx, m.emit)
	}()
	return m
}

// closeLinger is how long close still reads what has arrived: the packets
// a peer sent just before its BYE, which reached the socket before it.
const closeLinger = 20 * time.Millisecond

// close stops sending at once, delivers what the socket already holds,
// and waits for both directions; the Frames and Digits channels are closed
// when it returns.
func (m *Media) close() {
	m.closeOnce.Do(func() {
		close(m.done)
		m.cancel()
		_ = m.conn.SetReadDeadline(clock.Wall(closeLinger))
		m.wg.Wait()
		m.conn.Close()
		m.drainMu.Lock()
		for name, ch := range m.drains {
			close(ch)
			delete(m.drains, name)
		}
		m.drainMu.Unlock()
	})
}

// Codec is the codec negotiated for both directions.
func (m *Media) Codec() Codec { return m.codec }

// LocalAddr is the UDP address the call's RTP is received on.
func (m *Media) LocalAddr() netip.AddrPort { return m.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// RemoteAddr is where the call's RTP is sent: the address in the peer's
// SDP, or the one its RTP was latched from.
func (m *Media) RemoteAddr() netip.AddrPort {
	if p := m.sendTo.Load(); p != nil {
		return *p
	}
	return m.remote
}

// LastHeard is when the last RTP packet from the peer arrived (any
// payload type: audio, DTMF, comfort noise), on the server's Config.Now;
// zero before the first.
func (m *Media) LastHeard() time.Time {
	n := m.heard.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Frames delivers the caller's audio, one Frame per RTP packet in arrival
// order (duplicates dropped, no reordering). When the reader falls 1 s
// behind, the oldest frames are dropped. It is closed when the call ends.
func (m *Media) Frames() <-chan Frame { return m.frames }

// Digits delivers RFC 4733 DTMF digits ('0'-'9', '*', '#', 'A'-'D'), one
// per key press. It is closed when the call ends.
func (m *Media) Digits() <-chan rune { return m.digits }

// Stats returns the call's RTP counters so far.
func (m *Media) Stats() MediaStats {
	return MediaStats{
		PacketsIn:     m.in.Load(),
		PacketsOut:    m.out.Load(),
		AudioOut:      time.Duration(m.audio.Load()) * framePeriod,
		FramesDropped: m.dropped.Load(),
		Ignored:       m.ignored.Load(),
		Foreign:       m.foreign.Load(),
		Withheld:      m.withheld.Load(),
		Digits:        m.ndigits.Load(),
		Pace:          m.pacer.Stats(),
	}
}

func (m *Media) ended() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// WritePCM queues 8 kHz 16-bit linear audio behind what is already queued;
// it is sent in 20 ms packets in real time. A final partial frame waits for
// more audio until Drain (or the next Write) pads it with silence.
func (m *Media) WritePCM(pcm []int16) error {
	if m.ended() {
		return ErrEnded
	}
	var b []byte
	if m.codec.Name == "PCMA" {
		b = g711.EncodeAlaw(nil, pcm)
	} else {
		b = g711.EncodeMulaw(nil, pcm)
	}
	return m.pacer.Write(b)
}

// Write queues 8 kHz audio already in the call's Codec (µ-law for PCMU,
// A-law for PCMA), as WritePCM does.
func (m *Media) Write(b []byte) error {
	if m.ended() {
		return ErrEnded
	}
	return m.pacer.Write(b)
}

// WriteMulaw queues 8 kHz µ-law audio, transcoded when the call carries PCMA.
func (m *Media) WriteMulaw(ulaw []byte) error {
	if m.ended() {
		return ErrEnded
	}
	if m.codec.Name == "PCMA" {
		b := make([]byte, len(ulaw))
		for i, u := range ulaw {
			b[i] = g711.LinearToAlaw(g711.MulawToLinear(u))
		}
		ulaw = b
	}
	return m.pacer.Write(ulaw)
}

// Buffered is how much queued audio has not been sent yet.
func (m *Media) Buffered() time.Duration {
	return time.Duration(m.pacer.Buffered()) * framePeriod / frameSamples
}

// Clear drops all queued audio at once (a barge-in) and returns how much was
// dropped. No packet of the dropped audio is sent after Clear returns.
// Drains waiting on the dropped audio return.
func (m *Media) Clear() time.Duration {
	m.sendMu.Lock()
	n, marks := m.pacer.Clear()
	m.sendMu.Unlock()
	m.drainMu.Lock()
	for _, name := range marks {
		if ch, ok := m.drains[name]; ok {
			close(ch)
			delete(m.drains, name)
		}
	}
	m.drainMu.Unlock()
	return time.Duration(n) * framePeriod / frameSamples
}

// Drain pads the audio queued so far to a whole frame and waits until it
// has all been sent, or cleared. Sent is not yet played: a phone's jitter
// buffer adds some 20-100 ms. It returns ErrEnded if the call ends first.
func (m *Media) Drain(ctx context.Context) error {
	ch, name := m.flush()
	select {
	case <-ch:
		if m.ended() {
			return ErrEnded
		}
		return nil
	case <-m.done:
		return ErrEnded
	case <-ctx.Done():
		m.drainMu.Lock()
		delete(m.drains, name)
		m.drainMu.Unlock()
		return ctx.Err()
	}
}

// Flush is Drain without the wait: it pads the audio queued so far to a
// whole frame and returns a channel that is closed once that audio has
// all been sent, or cleared, or the call has ended.
func (m *Media) Flush() <-chan struct{} {
	ch, _ := m.flush()
	return ch
}

func (m *Media) flush() (<-chan struct{}, string) {
	m.drainMu.Lock()
	m.drainN++
	name := strconv.FormatUint(m.drainN, 10)
	ch := make(chan struct{})
	if m.ended() { // close may have closed the others already
		m.drainMu.Unlock()
		close(ch)
		return ch, name
	}
	m.drains[name] = ch
	m.drainMu.Unlock()
	m.pacer.Mark(name)
	return ch, name
}

// emit sends one paced event: an audio packet, or a Drain's mark.
func (m *Media) emit(ev pace.Event) error {
	if ev.Frame == nil {
		m.drainMu.Lock()
		if ch, ok := m.drains[ev.Mark]; ok {
			close(ch)
			delete(m.drains, ev.Mark)
		}
		m.drainMu.Unlock()
		return nil
	}
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	if ev.Gen != m.pacer.Generation() {
		return nil // taken off the queue before a Clear
	}
	ts := m.tsBase + uint32(ev.Due.Sub(m.start)/(time.Second/8000))
	marker := !m.sent || ev.Due.Sub(m.lastDue) != framePeriod // a talkspurt begins
	if m.sent && int32(ts-m.lastTS) < frameSamples {
		ts = m.lastTS + frameSamples // never reuse or step back a timestamp
	}
	m.lastTS, m.lastDue, m.sent = ts, ev.Due, true
	m.writePacket(m.codec.PayloadType, marker, ts, ev.Frame)
	m.audio.Add(1)
	return nil
}

// writePacket sends one RTP packet; the caller holds sendMu. A failed send
// is logged, not returned: UDP to a peer that has gone is not an error of
// the pacer's.
func (m *Media) writePacket(pt uint8, marker bool, ts uint32, payload []byte) {
	p := rtp.Packet{
		Header: rtp.Header{
			Version:        2,
			Marker:         marker,
			PayloadType:    pt,
			SequenceNumber: m.seq,
			Timestamp:      ts,
			SSRC:           m.ssrc,
		},
		Payload: payload,
	}
	m.seq++
	dst := m.sendTo.Load()
	if dst == nil {
		// The SDP named an address that has not asked for RTP: sending
		// there would make this server an amplifier for anyone who
		// writes a victim's address in an offer.
		m.withheld.Add(1)
		if m.peer.count != nil {
			m.peer.count.withheld.Add(1)
		}
		return
	}
	b, err := p.Marshal()
	if err != nil {
		return
	}
	if _, err := m.conn.WriteToUDPAddrPort(b, *dst); err != nil {
		if !m.ended() {
			m.log.Debug("sip: rtp send failed", "err", err)
		}
		return
	}
	m.out.Add(1)
}

// receive reads RTP until the socket closes, then closes Frames and Digits.
func (m *Media) receive() {
	defer close(m.frames)
	defer close(m.digits)
	buf := make([]byte, maxPacket+1)
	var dec dtmfDecoder
	var lastSeq uint16
	var haveSeq bool
	var src netip.AddrPort // the latched source, once one is
	for {
		n, from, err := m.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !m.ended() && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				m.log.Debug("sip: rtp receive failed", "err", err)
			}
			return
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if !m.from(from, src) {
			m.ignored.Add(1)
			m.foreign.Add(1)
			if m.peer.count != nil {
				m.peer.count.foreign.Add(1)
			}
			continue
		}
		if n > maxPacket {
			m.ignored.Add(1)
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(buf[:n]); err != nil || p.Version != 2 {
			m.ignored.Add(1)
			continue
		}
		if !src.IsValid() {
			// The first RTP packet latches its source: from now on only
			// it is heard, and what is said goes back to it.
			src = from
			m.sendTo.Store(&from)
		}
		m.heard.Store(m.peer.now().UnixNano())
		switch {
		case p.PayloadType == m.codec.PayloadType:
			if haveSeq && p.SequenceNumber == lastSeq {
				m.ignored.Add(1)
				continue
			}
			lastSeq, haveSeq = p.SequenceNumber, true
			m.in.Add(1)
			m.deliver(p)
		case m.eventPT >= 0 && int(p.PayloadType) == m.eventPT:
			m.in.Add(1)
			digits, err := dec.packet(p.Timestamp, p.Payload)
			if err != nil {
				m.ignored.Add(1)
				continue
			}
			for _, d := range digits {
				m.ndigits.Add(1)
				select {
				case m.digits <- d:
				default:
					m.log.Warn("sip: digit dropped, Digits not read", "caller_digit", string(d))
				}
			}
		default:
			m.ignored.Add(1) // comfort noise and other payloads
		}
	}
}

// from reports whether a datagram from addr is the call's: from the
// latched source once there is one; before, from the SDP address, or from
// the signalling host when the SDP names another (a private address
// behind NAT).
func (m *Media) from(addr, latched netip.AddrPort) bool {
	if latched.IsValid() {
		return addr == latched
	}
	if addr == m.remote {
		return true
	}
	return m.peer.signal.IsValid() && m.remote.Addr() != m.peer.signal && addr.Addr() == m.peer.signal
}

func (m *Media) deliver(p rtp.Packet) {
	f := Frame{SSRC: p.SSRC, Seq: p.SequenceNumber, Timestamp: p.Timestamp, Marker: p.Marker, Payload: append([]byte(nil), p.Payload...)}
	if m.codec.Name == "PCMA" {
		f.PCM = g711.DecodeAlaw(nil, f.Payload)
	} else {
		f.PCM = g711.DecodeMulaw(nil, f.Payload)
	}
	for {
		select {
		case m.frames <- f:
			return
		default:
		}
		select {
		case <-m.frames: // drop the oldest
			m.dropped.Add(1)
		default:
		}
	}
}

// SendDigit sends one RFC 4733 telephone-event of the given length (100 ms
// when zero or shorter than a packet): a packet every 20 ms while the key is
// held and the end packet three times. Audio keeps flowing meanwhile.
func (m *Media) SendDigit(ctx context.Context, digit rune, length time.Duration) error {
	code, err := eventCode(digit)
	if err != nil {
		return err
	}
	if m.eventPT < 0 {
		return ErrNoTelephoneEvent
	}
	if length < framePeriod {
		length = 100 * time.Millisecond
	}
	if m.ended() {
		return ErrEnded
	}
	ts := m.tsBase + uint32(clock.Since(clock.System, m.start)/(time.Second/8000))
	steps := int(length / framePeriod)
	tick := clock.NewTicker(clock.System, framePeriod)
	defer tick.Stop()
	send := func(i int, end bool) {
		dur := uint16(min(i*frameSamples, 0xffff))
		ev := telephoneEvent{Event: code, End: end, Volume: 10, Duration: dur}
		m.sendMu.Lock()
		m.writePacket(uint8(m.eventPT), i == 1 && !end, ts, ev.append(nil))
		m.sendMu.Unlock()
	}
	for i := 1; i <= steps; i++ {
		send(i, false)
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-m.done:
			return ErrEnded
		}
	}
	for range 3 {
		send(steps, true)
	}
	return nil
}

// String names the stream for logs.
func (m *Media) String() string {
	return fmt.Sprintf("%s %s->%s", m.codec, m.LocalAddr(), m.RemoteAddr())
}
