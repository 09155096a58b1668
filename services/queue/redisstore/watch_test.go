//go:build unix

package redisstore

import (
	"net"
	"testing"
	"time"
)

// TestWatchedConnSaysWhatIsUnheard: bytes the peer sent are unheard while
// they wait in the kernel and once read, until the reader asks for more
// (go-redis does only after it handed on every message read before).
func TestWatchedConnSaysWhatIsUnheard(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	w := watch(conn)
	if w == nil {
		t.Fatal("a TCP connection is not watched")
	}
	defer w.Close()
	if !w.caughtUp() {
		t.Fatal("nothing sent yet, and not caught up")
	}
	if _, err := peer.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); w.caughtUp(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("bytes sent 5 s ago, and still caught up")
		}
	}
	buf := make([]byte, 16)
	if n, err := w.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if w.caughtUp() {
		t.Fatal("read but not handled yet, and caught up")
	}
	got := make(chan string, 1)
	go func() {
		n, _ := w.Read(buf) // asks for more: what was read is handled
		got <- string(buf[:n])
	}()
	for deadline := time.Now().Add(5 * time.Second); !w.caughtUp(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reader asked for more 5 s ago, and not caught up")
		}
	}
	if _, err := peer.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "again" || w.caughtUp() {
		t.Fatalf("second Read = %q, caught up %v; want again, not caught up", s, w.caughtUp())
	}
	// A connection the peer closed is never caught up: the end is unheard.
	go func() { _, _ = w.Read(buf) }()
	peer.Close()
	for deadline := time.Now().Add(5 * time.Second); w.caughtUp(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("closed 5 s ago, and still caught up")
		}
	}
}

// BenchmarkWatchedConnCaughtUp is what an answer from memory adds: one look
// at an idle subscription's socket.
func BenchmarkWatchedConnCaughtUp(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	w := watch(conn)
	defer w.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !w.caughtUp() {
				b.Fatal("not caught up")
			}
		}
	})
}
