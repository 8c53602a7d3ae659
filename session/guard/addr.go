package guard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// ParsePrefixes parses a comma-separated list of addresses and CIDR
// prefixes (-trusted-proxies). A bare address is a prefix of its own.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("guard: trusted proxy %q: %w", f, err)
			}
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("guard: trusted proxy %q: %w", f, err)
		}
		a = a.Unmap()
		ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
	}
	return ps, nil
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the IP address of a connection's peer (invalid when it has
// none, as on a pipe or a Unix socket).
func peerAddr(a net.Addr) netip.Addr {
	if a == nil {
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// IPv6PerAddrBits is the prefix length one IPv6 source is counted by:
// a single subscriber is routinely given a whole /64, so counting each
// address in it would let one source open countless "addresses".
const IPv6PerAddrBits = 64

// addrKey is the key a source address is counted under by the per-address
// caps: an IPv4 address itself, an IPv6 address its /64 (an IPv4-mapped
// IPv6 address is the IPv4 one).
func addrKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if !a.Is6() {
		return a
	}
	return netip.PrefixFrom(a, IPv6PerAddrBits).Masked().Addr()
}

// sourceOf is a request's source as the per-address caps count it: its
// peer's address key, or behind a trusted proxy its client's ("" when it
// has none).
func sourceOf(r *http.Request) string {
	var a netip.Addr
	if cc, _ := r.Context().Value(connKey{}).(*conn); cc != nil {
		a = cc.peer
		if cc.trusted && cc.l != nil {
			a = clientOf(cc.peer, r.Header.Values("X-Forwarded-For"), cc.l.lim.TrustedProxies)
		}
	} else if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		a = ap.Addr()
	}
	if !a.IsValid() {
		return ""
	}
	return addrKey(a).String()
}

// clientOf is the address a request comes from: its peer's, or, when the
// peer is one of trusted, the right-most X-Forwarded-For entry that is not
// itself a trusted proxy (entries to its left were written by the client
// and prove nothing).
func clientOf(peer netip.Addr, xff []string, trusted []netip.Prefix) netip.Addr {
	if !inPrefixes(peer, trusted) {
		return peer
	}
	var hops []string
	for _, h := range xff {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return client // a hop we cannot read: stop at the last one we could
		}
		client = a.Unmap()
		if !inPrefixes(client, trusted) {
			break
		}
	}
	return client
}

type connKey struct{}

// withConn is the http.Server's ConnContext: a request finds its
// connection's admission (Listener) in its context.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*conn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// probePath reports whether a path may be served on a probe connection.
func probePath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/metrics"
}

// connGate applies the listener's decisions to each request: the
// connection's handshake is over once a request has arrived; a probe
// connection serves only health checks and metrics; behind a trusted proxy
// the client's connections are bounded by its X-Forwarded-For address.
func connGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc, _ := r.Context().Value(connKey{}).(*conn)
		if cc == nil {
			next.ServeHTTP(w, r)
			return
		}
		cc.requested()
		if cc.probe {
			w.Header().Set("Connection", "close")
			if !probePath(r.URL.Path) {
				refuseConn(w, cc.refuse)
				return
			}
		}
		if cc.trusted && cc.l != nil {
			client := clientOf(cc.peer, r.Header.Values("X-Forwarded-For"), cc.l.lim.TrustedProxies)
			if !probePath(r.URL.Path) && !cc.forClient(client) {
				w.Header().Set("Connection", "close")
				refuseConn(w, http.StatusTooManyRequests)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func refuseConn(w http.ResponseWriter, status int) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	code := "overloaded"
	if status == http.StatusTooManyRequests {
		code = "too_many_connections"
	}
	_, _ = w.Write([]byte(`{"code":"` + code + `","message":"` + strconv.Itoa(status) + ` ` + http.StatusText(status) + `"}` + "\n"))
}
