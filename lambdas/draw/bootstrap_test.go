package main

import (
	"context"
	"testing"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/draw"
	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api/tier1apitest"
)

type drawDoc struct {
	Status string `json:"status"`
	Round  uint64 `json:"round"`
	Root   string `json:"root"`
	N      *int64 `json:"n"`
	Beacon *struct {
		Round uint64 `json:"round"`
	} `json:"beacon"`
}

// TestBootstrap runs events/draw.apigw.json against the built bootstrap on
// DynamoDB (moto), with a local beacon stand-in on the wall clock: the
// document before the opening, and the draw its first request after the
// round performs.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	lb, dc := storetest.Beacon(t, clock.System{})
	dc.Margin = time.Second
	delete(st.Env, "VWR_TIER1_TOKEN_KEYS") // template.yaml gives this function no signing key
	st.Env["VWR_DRAW_BEACON_URL"] = dc.Beacon.(draw.Client).URL
	st.Env["VWR_DRAW_CHAIN_INFO"] = lb.InfoJSON()
	st.Env["VWR_DRAW_MARGIN"] = "1s"
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/draw"), lambdatest.Options{Env: st.Env, FunctionName: "vwr-draw"})
	ev := tier1apitest.FixtureEvent
	event := tier1apitest.Fixture(t, "draw.apigw.json")

	resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	if resp.StatusCode != 404 {
		t.Fatalf("never scheduled: %d %s", resp.StatusCode, resp.Body)
	}

	svc := tier1.New(st.Store, st.Keys, clock.System{}, tier1.Config{Draw: dc})
	// The schedule, an enter and the first invoke (moto, a cold bootstrap)
	// must come before the opening: 2 s ahead was too little at a load
	// average of 13 (the invoke answered "drawing").
	opens := time.Now().Add(5 * time.Second).Truncate(time.Second).Add(time.Second)
	sale, err := svc.Schedule(ctx, ev, opens, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AssignWithNonce(ctx, ev, "", []byte("0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	resp = tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	if d := tier1apitest.Body[drawDoc](t, resp); resp.StatusCode != 200 || d.Status != "prequeue" || d.Round != sale.Round {
		t.Fatalf("before the opening: %d %s", resp.StatusCode, resp.Body)
	}

	// Close at the opening (the advancer's job), then wait for the round.
	time.Sleep(time.Until(opens))
	if _, err := svc.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(dc.Chain.TimeOf(sale.Round)) + 100*time.Millisecond)
	resp = tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	d := tier1apitest.Body[drawDoc](t, resp)
	if resp.StatusCode != 200 || d.Status != "drawn" || d.Beacon == nil || d.Beacon.Round != sale.Round || d.N == nil || *d.N != 1 {
		t.Fatalf("after the round: %d %s", resp.StatusCode, resp.Body)
	}
	if cc := resp.Headers["Cache-Control"]; cc != "public, max-age=31536000, immutable" {
		t.Errorf("Cache-Control %q", cc)
	}
}
