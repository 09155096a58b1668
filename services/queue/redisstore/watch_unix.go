//go:build unix

package redisstore

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
)

// watchedConn is a subscription's socket. go-redis reads from it again only
// once it has handed on every message it read before, and the subscriber
// handles each message before it asks for the next: so a Read says that
// what was read before is handled. Read waits for bytes without taking
// them, marks them busy, then takes them; caughtUp looks for bytes the
// kernel holds first, then for busy ones.
type watchedConn struct {
	net.Conn
	rc   syscall.RawConn
	busy atomic.Bool
}

// watch watches conn, or returns nil when it is no socket (TLS).
func watch(conn net.Conn) *watchedConn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &watchedConn{Conn: conn, rc: rc}
}

// peek looks at fd without taking anything: empty when it holds nothing
// to read yet (bytes, an end or an error are for the next Read to take);
// again when the look was interrupted.
func peek(fd uintptr) (empty, again bool) {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR)
}

func (c *watchedConn) Read(p []byte) (int, error) {
	c.busy.Store(false)
	// Wait (the read deadline holds) until bytes come, leaving them there.
	if err := c.rc.Read(func(fd uintptr) bool {
		empty, again := peek(fd)
		return !empty && !again
	}); err != nil {
		return 0, err
	}
	c.busy.Store(true)
	return c.Conn.Read(p)
}

// caughtUp says that every byte Redis has sent on the connection so far was
// handled: none waits in the kernel, none was read and not yet handled.
// The kernel first: bytes taken after that look were marked busy before.
func (c *watchedConn) caughtUp() bool {
	empty := false
	if err := c.rc.Control(func(fd uintptr) { empty, _ = peek(fd) }); err != nil || !empty {
		return false
	}
	return !c.busy.Load()
}
