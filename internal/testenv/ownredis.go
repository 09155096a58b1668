package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// OwnRedis is a redis-server of one test's own, which the test may kill
// with SIGKILL and start again empty on the same address: the "Redis lost
// everything" case. It is stopped at the end of the test.
type OwnRedis struct {
	Addr string
	tb   testing.TB
	srv  *server
}

// NewOwnRedis starts a private redis-server without persistence.
func NewOwnRedis(tb testing.TB) *OwnRedis {
	tb.Helper()
	addr, srv := startRedisNode(tb)
	r := &OwnRedis{Addr: addr, tb: tb, srv: srv}
	tb.Cleanup(func() { r.srv.discard() })
	return r
}

// Kill9 kills the server with SIGKILL and waits until it is gone.
func (r *OwnRedis) Kill9() {
	r.tb.Helper()
	r.srv.discard()
}

// Restart starts an empty redis-server on the same address (no
// persistence, so nothing survives the Kill9 before it).
func (r *OwnRedis) Restart() {
	r.tb.Helper()
	bin := lookBinary(r.tb, "VWR_REDIS_SERVER", "redis-server", "/usr/bin/redis-server")
	_, portStr, _ := strings.Cut(r.Addr, ":")
	port, err := strconv.Atoi(portStr)
	if err != nil {
		r.tb.Fatalf("testenv: address %s: %v", r.Addr, err)
	}
	dir, err := os.MkdirTemp("", "vwr-redis-")
	if err != nil {
		r.tb.Fatalf("testenv: temp dir: %v", err)
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}
	s := start(r.tb, bin, args, dir)
	if err := waitRedis(s, r.Addr, nil, ""); err != nil {
		s.discard()
		r.tb.Fatal(fmt.Errorf("testenv: restart redis-server on %s: %w", r.Addr, err))
	}
	r.srv = s
}
