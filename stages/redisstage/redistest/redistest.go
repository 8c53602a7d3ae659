// Package redistest starts a real redis-server on loopback for tests.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process owned by one test.
type Server struct {
	t       testing.TB
	Addr    string
	port    int
	dir     string
	persist bool

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start runs redis-server on a free loopback port with no persistence, and
// stops it when the test ends.
func Start(t testing.TB) *Server { return start(t, false) }

// StartPersistent is Start with an append-only file fsynced on every write,
// so that Restart keeps the dataset.
func StartPersistent(t testing.TB) *Server { return start(t, true) }

func start(t testing.TB, persist bool) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{t: t, port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), dir: t.TempDir(), persist: persist}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again on the same port (after Stop or Kill).
func (s *Server) Restart() {
	s.t.Helper()
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--dir", s.dir}
	if s.persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not start: %v", s.Addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL) and waits for it to exit. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// URL is the server's address as a -store flag value for database db.
func (s *Server) URL(db int) string { return fmt.Sprintf("redis://%s/%d", s.Addr, db) }

// Client returns a client with short timeouts, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(Options(s.Addr))
	t.Cleanup(func() { c.Close() })
	return c
}

// Options are client options with short timeouts and no retries, so that an
// outage shows at once.
func Options(addr string) *redis.Options {
	return &redis.Options{
		Addr:         addr,
		DialTimeout:  200 * time.Millisecond,
		ReadTimeout:  500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond,
		MaxRetries:   -1,
		PoolSize:     16,
	}
}
