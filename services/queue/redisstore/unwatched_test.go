package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/services/queue"
)

// TestLineChangesOnAnUnwatchedClient: a client whose socket the store
// cannot watch (here a Ring, neither a Client nor a ClusterClient) still
// subscribes, says it cannot tell what is unheard (caughtUp nil), and
// hands on what is published.
func TestLineChangesOnAnUnwatchedClient(t *testing.T) {
	t.Parallel()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": testenv.Redis(t)}})
	t.Cleanup(func() { _ = ring.Close() })
	st := New(ring, Options{Prefix: testenv.UniqueID(t) + ":"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan bool, 1)
	heard := make(chan queue.LinePush, 1)
	done := make(chan error, 1)
	go func() {
		done <- st.LineChanges(ctx, func(caughtUp func() bool) { ready <- caughtUp == nil }, func(p queue.LinePush) { heard <- p })
	}()
	select {
	case unwatched := <-ready:
		if !unwatched {
			t.Fatal("a Ring's subscription claims to know what is unheard")
		}
	case err := <-done:
		t.Fatalf("LineChanges ended before it held: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription never held")
	}
	if err := ring.Publish(ctx, st.k.lineChanges(), "ev1").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-heard:
		if p.EventID != "ev1" || p.Seq != 0 {
			t.Fatalf("heard %+v, want an event to read again", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing heard")
	}
	cancel()
	<-done
}
