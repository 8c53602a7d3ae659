package audiosocket

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/media/gateway"
)

// Link is a gateway.Link over an AudioSocket TCP connection: it reads whole
// messages (header and payload; at most MaxMessageSize bytes, which the
// 16-bit length bounds) and writes the ones a Codec encodes. A frame read is
// valid until the next ReadFrame.
type Link struct {
	conn net.Conn
	buf  []byte
	wmu  sync.Mutex
}

// NewLink wraps an accepted (or dialled) AudioSocket connection.
func NewLink(conn net.Conn) *Link { return &Link{conn: conn, buf: make([]byte, 0, 4096)} }

// ReadFrame reads one message. When ctx ends, a blocked read returns.
func (l *Link) ReadFrame(ctx context.Context) (gateway.Frame, error) {
	if err := ctx.Err(); err != nil {
		return gateway.Frame{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = l.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	l.buf = l.buf[:HeaderSize]
	if _, err := io.ReadFull(l.conn, l.buf); err != nil {
		return gateway.Frame{}, l.err(ctx, err)
	}
	n := int(binary.BigEndian.Uint16(l.buf[1:]))
	l.buf = slices.Grow(l.buf, n)[:HeaderSize+n]
	if _, err := io.ReadFull(l.conn, l.buf[HeaderSize:]); err != nil {
		return gateway.Frame{}, l.err(ctx, err)
	}
	return gateway.Frame{Binary: true, Data: l.buf}, nil
}

func (l *Link) err(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// WriteFrame writes one message (the whole of f.Data). When ctx ends, a
// blocked write returns.
func (l *Link) WriteFrame(ctx context.Context, f gateway.Frame) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = l.conn.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := l.conn.Write(f.Data); err != nil {
		return l.err(ctx, err)
	}
	return nil
}

// Close closes the connection.
func (l *Link) Close() error { return l.conn.Close() }
