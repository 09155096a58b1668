package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
	"github.com/vwr-go/vwr/internal/tier1/tier1api/tier1apitest"
)

// TestBootstrap runs events/advancer.eventbridge.json against the built
// bootstrap on DynamoDB (moto), with two ticks a second apart.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	delete(st.Env, "VWR_TIER1_TOKEN_KEYS") // template.yaml gives this function no signing key
	st.Env["ADVANCER_TICKS"] = "2"
	st.Env["ADVANCER_TICK_SECONDS"] = "1"
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/advancer"), lambdatest.Options{Env: st.Env, FunctionName: "vwr-advancer"})
	ev := tier1apitest.FixtureEvent

	if _, err := st.Service.Activate(ctx, ev, 1, 2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := st.Service.Assign(ctx, ev, ""); err != nil {
			t.Fatal(err)
		}
	}
	res := fn.Invoke(t, tier1apitest.Fixture(t, "advancer.eventbridge.json"))
	if res.Error != nil {
		t.Fatalf("advancer error %v\n%s", res.Error, fn.Logs())
	}
	var rep tier1api.AdvancerReport
	if err := json.Unmarshal(res.Payload, &rep); err != nil {
		t.Fatal(err)
	}
	want := []tier1api.AdvanceDone{{EventID: ev, From: 0, To: 2, Admitted: 2}, {EventID: ev, From: 2, To: 3, Admitted: 1}}
	if rep.Ticks != 2 || rep.FailedTicks != 0 || fmt.Sprint(rep.Raises) != fmt.Sprint(want) {
		t.Fatalf("report %+v, want raises %+v", rep, want)
	}
	adm, err := st.Service.AdminStatus(ctx, ev)
	if err != nil || adm.ServingCounter != 3 {
		t.Fatalf("serving counter in DynamoDB %d (%v), want 3", adm.ServingCounter, err)
	}
	if n := len(tier1apitest.LogLines(fn, "ServingCounter")); n != 2 {
		t.Errorf("%d ServingCounter EMF lines, want 2; logs:\n%s", n, fn.Logs())
	}
}
