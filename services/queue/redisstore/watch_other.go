//go:build !unix

package redisstore

import "net"

// watchedConn is not available here: subscriptions are unwatched.
type watchedConn struct{ net.Conn }

func watch(net.Conn) *watchedConn { return nil }

func (c *watchedConn) caughtUp() bool { return false }
