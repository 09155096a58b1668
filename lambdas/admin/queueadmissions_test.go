package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/vwr-go/vwr/internal/admitted"
	admitteddb "github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api/tier1apitest"
)

// TestBootstrapQueueAdmissions runs the built bootstrap with and without
// VWR_ADMITTED_STATS_TABLE: with it, the admin status shows the admissions
// the SQS consumer's store counted in the last complete minute; without it,
// the field is absent.
func TestBootstrapQueueAdmissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := tier1apitest.Moto(t)
	delete(st.Env, "VWR_TIER1_TOKEN_KEYS")
	ev := tier1apitest.FixtureEvent
	if _, err := st.Service.Activate(ctx, ev, 1, 10); err != nil {
		t.Fatal(err)
	}

	db := dynamodb.NewFromConfig(awstest.Config(st.Env["AWS_ENDPOINT_URL"]))
	id := testenv.UniqueID(t)
	tables := admitteddb.Tables{Processed: "processed-" + id, Stats: "stats-" + id}
	if err := admitteddb.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	consumer, err := admitteddb.New(db, tables, clock.System{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		stats string
		want  string // "" = field absent
	}{
		{"configured", tables.Stats, "4"},
		{"unset", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for k, v := range st.Env {
				env[k] = v
			}
			if c.stats != "" {
				env["VWR_ADMITTED_STATS_TABLE"] = c.stats
			}
			fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/admin"), lambdatest.Options{Env: env, FunctionName: "vwr-admin"})
			if c.stats != "" {
				recordAround(ctx, t, consumer, ev)
			}
			resp := tier1apitest.HTTPResponse(t, fn, fn.Invoke(t, tier1apitest.Fixture(t, "admin-status.apigw.json")))
			if resp.StatusCode != 200 {
				t.Fatalf("status: %d %s", resp.StatusCode, resp.Body)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(resp.Body), &doc); err != nil {
				t.Fatal(err)
			}
			raw, ok := doc["queueAdmittedLastMinute"]
			if c.want == "" && ok {
				t.Fatalf("queueAdmittedLastMinute = %s without VWR_ADMITTED_STATS_TABLE", raw)
			}
			if c.want != "" && string(raw) != c.want {
				t.Fatalf("queueAdmittedLastMinute = %q, want %s; body %s\nlogs:\n%s", raw, c.want, resp.Body, fn.Logs())
			}
			if string(doc["active"]) != "true" {
				t.Fatalf("status lost its Tier 1 fields: %s", resp.Body)
			}
		})
	}
}

// recordAround counts 4 admissions in the previous minute and 4 in the
// current one: whichever is the last complete minute when the status runs
// (even across a minute boundary) holds 4. It runs after the bootstrap is
// built and started, which can take minutes on a loaded machine.
func recordAround(ctx context.Context, t *testing.T, consumer *admitteddb.Store, ev string) {
	t.Helper()
	cur := time.Unix(admitteddb.MinuteOf(time.Now()), 0)
	for i, at := range []time.Time{cur.Add(-time.Minute), cur} {
		for j := 0; j < 4; j++ {
			ts := at.Add(time.Duration(j) * time.Second)
			m := admitted.Message{Action: admitted.Action, EventID: ev, UserID: fmt.Sprintf("u-%d-%d", i, j), ExpiresAt: ts.Add(10 * time.Minute), Timestamp: ts}
			if _, err := consumer.Record(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
}
