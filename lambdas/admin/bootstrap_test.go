package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api/tier1apitest"
)

type adminDoc struct {
	Active         bool    `json:"active"`
	Paused         bool    `json:"paused"`
	Shards         int     `json:"shards"`
	BatchSize      int64   `json:"batchSize"`
	ServingCounter int64   `json:"servingCounter"`
	MaxAssigned    int64   `json:"maxAssigned"`
	Assigned       int64   `json:"assigned"`
	ShardCounters  []int64 `json:"shardCounters"`
	Code           string  `json:"code"`
}

// TestBootstrap runs every events/admin-*.apigw.json against the built
// bootstrap on DynamoDB (moto), in an operator's order.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	delete(st.Env, "VWR_TIER1_TOKEN_KEYS") // template.yaml gives this function no signing key
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/admin"), lambdatest.Options{Env: st.Env, FunctionName: "vwr-admin"})
	ev := tier1apitest.FixtureEvent

	invoke := func(name string, wantStatus int) adminDoc {
		t.Helper()
		resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, tier1apitest.Fixture(t, name)))
		if resp.StatusCode != wantStatus {
			t.Fatalf("%s: %d %s, want %d", name, resp.StatusCode, resp.Body, wantStatus)
		}
		return tier1apitest.Body[adminDoc](t, resp)
	}

	if d := invoke("admin-status.apigw.json", 404); d.Code != "not_found" {
		t.Fatalf("status before activate: %+v", d)
	}
	if d := invoke("admin-activate.apigw.json", 200); !d.Active || d.Shards != 4 || d.BatchSize != 500 || len(d.ShardCounters) != 4 {
		t.Fatalf("activate: %+v", d)
	}
	for i := 0; i < 6; i++ {
		if _, err := st.Service.Assign(ctx, ev, ""); err != nil {
			t.Fatal(err)
		}
	}
	if d := invoke("admin-pause.apigw.json", 200); !d.Paused {
		t.Fatalf("pause: %+v", d)
	}
	if d := invoke("admin-resume.apigw.json", 200); d.Paused {
		t.Fatalf("resume: %+v", d)
	}
	if d := invoke("admin-advance.apigw.json", 200); d.ServingCounter != d.MaxAssigned || d.Assigned != 6 {
		t.Fatalf("advance by 1000 with 6 visitors: %+v", d)
	}
	d := invoke("admin-status.apigw.json", 200)
	var sum int64
	for _, c := range d.ShardCounters {
		sum += c
	}
	if sum != 6 || d.Assigned != 6 {
		t.Fatalf("status: shard counters %v, assigned %d", d.ShardCounters, d.Assigned)
	}
	if d := invoke("admin-deactivate.apigw.json", 200); d.Active {
		t.Fatalf("deactivate: %+v", d)
	}

	// The same request without API Gateway's IAM context (route attached
	// without auth by mistake) is refused: no VWR_ADMIN_TOKEN is set here.
	var raw map[string]any
	if err := json.Unmarshal(tier1apitest.Fixture(t, "admin-activate.apigw.json"), &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw["requestContext"].(map[string]any), "authorizer")
	b, _ := json.Marshal(raw)
	resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, b))
	if resp.StatusCode != 401 {
		t.Fatalf("without IAM context: %d %s", resp.StatusCode, resp.Body)
	}
	if st, _ := st.Service.AdminStatus(ctx, ev); st.Active {
		t.Fatal("refused activate re-activated the event")
	}
}
