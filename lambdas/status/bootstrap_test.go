package main

import (
	"context"
	"testing"

	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api/tier1apitest"
)

type statusDoc struct {
	EventID        string `json:"eventId"`
	Active         bool   `json:"active"`
	ServingCounter int64  `json:"servingCounter"`
	MaxAssigned    int64  `json:"maxAssigned"`
}

// TestBootstrap runs events/status.apigw.json against the built bootstrap on
// DynamoDB (moto).
func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	delete(st.Env, "VWR_TIER1_TOKEN_KEYS") // template.yaml gives this function no signing key
	st.Env["VWR_TIER1_STATUS_CACHE_TTL"] = "1ms"
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/status"), lambdatest.Options{Env: st.Env, FunctionName: "vwr-status"})
	ev := tier1apitest.FixtureEvent
	event := tier1apitest.Fixture(t, "status.apigw.json")

	resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	if d := tier1apitest.Body[statusDoc](t, resp); resp.StatusCode != 200 || d.Active || d.EventID != ev {
		t.Fatalf("never activated: %d %s", resp.StatusCode, resp.Body)
	}

	if _, err := st.Service.Activate(ctx, ev, 2, 10); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := st.Service.Assign(ctx, ev, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Service.AdvanceBy(ctx, ev, 1); err != nil {
		t.Fatal(err)
	}
	adm, err := st.Service.AdminStatus(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	resp = tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, event))
	d := tier1apitest.Body[statusDoc](t, resp)
	if resp.StatusCode != 200 || !d.Active || d.ServingCounter != adm.ServingCounter || d.MaxAssigned != adm.MaxAssigned || d.ServingCounter < 1 {
		t.Fatalf("status %s, store says %+v", resp.Body, adm)
	}
	if cc := resp.Headers["Cache-Control"]; cc != "public, max-age=1, stale-while-revalidate=2" {
		t.Errorf("Cache-Control %q", cc)
	}
}
