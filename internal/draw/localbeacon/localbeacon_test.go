package localbeacon_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/draw/localbeacon"
)

// TestServesDrandAPI fetches through draw.Client, the code the draw uses:
// a published round verifies, a future one is not out yet, an outage is an
// error, and another seed is another chain.
func TestServesDrandAPI(t *testing.T) {
	t.Parallel()
	genesis := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewManual(genesis.Add(30 * time.Second))
	lb, err := localbeacon.New(clk, bytes.Repeat([]byte{1}, 32), genesis, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(lb)
	t.Cleanup(srv.Close)
	info, err := draw.ParseChainInfo([]byte(lb.InfoJSON()))
	if err != nil {
		t.Fatalf("served info: %v", err)
	}
	c := draw.Client{URL: srv.URL, Chain: info}
	ctx := context.Background()
	latest := info.RoundAt(clk.Now())
	if latest != 11 {
		t.Fatalf("latest round at +30 s with a 3 s period = %d, want 11", latest)
	}
	b, err := c.Fetch(ctx, latest)
	if err != nil || b.Round != latest {
		t.Fatalf("Fetch(%d) = %+v, %v", latest, b, err)
	}
	if _, err := c.Fetch(ctx, latest+1); !errors.Is(err, draw.ErrRoundNotYet) {
		t.Fatalf("a future round: %v, want ErrRoundNotYet", err)
	}
	lb.SetDown(true)
	if _, err := c.Fetch(ctx, latest); err == nil || errors.Is(err, draw.ErrRoundNotYet) {
		t.Fatalf("beacon down: %v, want an outage error", err)
	}
	lb.SetDown(false)

	other, err := localbeacon.New(clk, bytes.Repeat([]byte{2}, 32), genesis, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := info.Verify(other.Round(latest)); err == nil {
		t.Fatal("another key's round verified under this chain")
	}
}
