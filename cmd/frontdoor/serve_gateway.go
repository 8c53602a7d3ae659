package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/frontdoorhq/frontdoor/session/server"
)

// gatewayOpts are the flags of the gateway dialects' endpoints
// (/v1/plivo, /v1/exotel, /v1/vonage, /v1/asterisk, /v1/freeswitch,
// /v1/jambonz) and of Asterisk AudioSocket over TCP.
type gatewayOpts struct {
	tokenEnv     string
	startTimeout time.Duration
	audioListen  string
	audioRate    int
	audioTenant  string
}

func gatewayFlags(fs *flag.FlagSet) *gatewayOpts {
	g := &gatewayOpts{}
	fs.StringVar(&g.tokenEnv, "gateway-token-env", "", "name of the environment variable holding a secret the gateway endpoints (/v1/plivo, /v1/exotel, /v1/vonage, /v1/asterisk, /v1/freeswitch, /v1/jambonz) require: as the upgrade's Basic password or Bearer token, or the start parameter \"token\" (docs/TELEPHONY.md); unset: none required")
	fs.DurationVar(&g.startTimeout, "gateway-start-timeout", 10*time.Second, "how long a gateway endpoint waits for the stream's start")
	fs.StringVar(&g.audioListen, "audiosocket-listen", "", "TCP address for Asterisk AudioSocket connections (host:port; unset: none). AudioSocket has no authentication: listen on a private address")
	fs.StringVar(&g.audioTenant, "audiosocket-tenant", "", "tenant of every AudioSocket call (AudioSocket names none): its calls at once and turns count against that tenant's caps (-tenant-*); unset: none")
	fs.IntVar(&g.audioRate, "audiosocket-rate", 8000, "sample rate of AudioSocket audio, as set in Asterisk: 8000, 12000, 16000, 24000, 32000 or 48000")
	return g
}

// apply checks the gateway flags and sets them on cfg.
func (g *gatewayOpts) apply(cfg *server.Config, lookup func(string) (string, bool)) error {
	switch g.audioRate {
	case 8000, 12000, 16000, 24000, 32000, 48000:
	default:
		return usageError{fmt.Errorf("-audiosocket-rate %d: want 8000, 12000, 16000, 24000, 32000 or 48000", g.audioRate)}
	}
	if g.tokenEnv != "" {
		tok, ok := lookup(g.tokenEnv)
		if !ok || tok == "" {
			return fmt.Errorf("-gateway-token-env %s: the variable is not set", g.tokenEnv)
		}
		cfg.Gateway.Token = tok
	}
	cfg.Gateway.StartTimeout = g.startTimeout
	cfg.Gateway.AudioSocketTenant = g.audioTenant
	return nil
}

// audioSocket is the AudioSocket listener and the connections it serves.
type audioSocket struct {
	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// listen starts accepting AudioSocket connections when -audiosocket-listen
// is set (nil otherwise). Each connection is a call of srv's engine.
func (g *gatewayOpts) listen(srv *server.Server, log *slog.Logger) (*audioSocket, error) {
	if g.audioListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", g.audioListen)
	if err != nil {
		return nil, fmt.Errorf("-audiosocket-listen %s: %w", g.audioListen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &audioSocket{ln: ln, cancel: cancel, conns: map[net.Conn]struct{}{}}
	h := srv.AudioSocket()
	log.Info("audiosocket listening", "addr", ln.Addr().String(), "rate", g.audioRate)
	a.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					log.Warn("audiosocket: accept", "err", err)
				}
				return
			}
			a.track(c, true)
			a.wg.Go(func() {
				defer a.track(c, false)
				defer c.Close()
				h.ServeAudioSocket(ctx, c, g.audioRate)
			})
		}
	})
	return a, nil
}

func (a *audioSocket) track(c net.Conn, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if on {
		a.conns[c] = struct{}{}
	} else {
		delete(a.conns, c)
	}
}

// stopAccepting closes the listener: calls in progress go on (the drain
// ends them).
func (a *audioSocket) stopAccepting() {
	if a != nil {
		_ = a.ln.Close()
	}
}

// Close stops accepting, ends the calls still connected and waits for
// them.
func (a *audioSocket) Close() {
	if a == nil {
		return
	}
	_ = a.ln.Close()
	a.cancel()
	a.mu.Lock()
	for c := range a.conns {
		_ = c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// The gateway flags are listed with the other telephony flags in serve's
// help.
func init() {
	serveFlagPrefixes = append(serveFlagPrefixes,
		struct{ prefix, group string }{"gateway-", "telephony"}, struct{ prefix, group string }{"audiosocket-", "telephony"})
}
