package tier1api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/vwr-go/vwr/internal/admitted"
	admitteddb "github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/internal/tier1/tier1api"
)

// statsTables creates the SQS consumer's two tables on moto (unique to the
// test) and records admissions through the consumer's own store: 7 in the
// minute before epoch (one of them delivered twice), 3 in epoch's minute and
// 2 of another event. The last complete minute at epoch therefore holds 7.
func statsTables(t *testing.T, clk clock.Clock) (*dynamodb.Client, admitteddb.Tables) {
	t.Helper()
	ctx := context.Background()
	db := dynamodb.NewFromConfig(awstest.Config(testenv.DynamoDB(t)))
	id := testenv.UniqueID(t)
	tables := admitteddb.Tables{Processed: id + "-processed", Stats: id + "-stats"}
	if err := admitteddb.CreateTables(ctx, db, tables); err != nil {
		t.Fatalf("create stats tables on moto: %v", err)
	}
	consumer, err := admitteddb.New(db, tables, clk)
	if err != nil {
		t.Fatal(err)
	}
	record := func(ev, user string, at time.Time) {
		t.Helper()
		m := admitted.Message{Action: admitted.Action, EventID: ev, UserID: user, ExpiresAt: at.Add(10 * time.Minute), Timestamp: at}
		if _, err := consumer.Record(ctx, m); err != nil {
			t.Fatalf("record %s/%s: %v", ev, user, err)
		}
	}
	for i := 0; i < 7; i++ {
		record(fixtureEvent, fmt.Sprintf("prev-%d", i), epoch.Add(-time.Minute+time.Duration(i)*time.Second))
	}
	record(fixtureEvent, "prev-0", epoch.Add(-time.Minute)) // redelivery: counted once
	for i := 0; i < 3; i++ {
		record(fixtureEvent, fmt.Sprintf("now-%d", i), epoch.Add(time.Duration(i+1)*time.Second))
	}
	for i := 0; i < 2; i++ {
		record("other-event", fmt.Sprintf("other-%d", i), epoch.Add(-30*time.Second))
	}
	return db, tables
}

// TestAdminStatusQueueAdmissions: the admin status carries the consumer's
// count for the last complete minute when a reader is configured, and leaves
// the field out when none is or when the read fails (still 200).
func TestAdminStatusQueueAdmissions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		reader  func(t *testing.T, clk clock.Clock) tier1api.QueueAdmissions
		want    int64 // -1: field absent
		warnLog bool
	}{
		{"stats table configured", func(t *testing.T, clk clock.Clock) tier1api.QueueAdmissions {
			db, tables := statsTables(t, clk)
			r, err := admitteddb.NewStatsReader(db, tables.Stats, clk)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, 7, false},
		{"not configured", func(*testing.T, clock.Clock) tier1api.QueueAdmissions { return nil }, -1, false},
		{"read fails", func(t *testing.T, clk clock.Clock) tier1api.QueueAdmissions {
			db, tables := statsTables(t, clk)
			r, err := admitteddb.NewStatsReader(db, tables.Stats+"-missing", clk)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, -1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{trustIAM: true})
			b.activate(t, fixtureEvent, 2, 10)
			deps := b.deps
			deps.QueueAdmissions = c.reader(t, b.clk)
			admin := tier1api.New(deps, b.adminOpt).Handler(tier1api.AdminRoutes...)

			resp := call(t, admin, fixture(t, "admin-status.apigw.json"))
			wantStatus(t, resp, 200)
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(resp.Body), &doc); err != nil {
				t.Fatal(err)
			}
			raw, present := doc["queueAdmittedLastMinute"]
			switch {
			case c.want < 0 && present:
				t.Errorf("queueAdmittedLastMinute = %s, want the field absent", raw)
			case c.want >= 0 && string(raw) != fmt.Sprint(c.want):
				t.Errorf("queueAdmittedLastMinute = %q, want %d; body %s", raw, c.want, resp.Body)
			}
			if _, ok := doc["servingCounter"]; !ok {
				t.Errorf("status lost its Tier 1 fields: %s", resp.Body)
			}
			if got := strings.Contains(b.logs.String(), `"msg":"tier1 queue admissions"`); got != c.warnLog {
				t.Errorf("failed-read log line present %v, want %v; logs:\n%s", got, c.warnLog, b.logs.String())
			}

			// Only the status route reads the stats; a state change answers
			// without them.
			resp = call(t, admin, fixture(t, "admin-pause.apigw.json"))
			wantStatus(t, resp, 200)
			if strings.Contains(resp.Body, "queueAdmittedLastMinute") {
				t.Errorf("pause carries queue admissions: %s", resp.Body)
			}
		})
	}
}

// TestStatsReaderIsReadOnly: the admin's reader cannot count admissions.
func TestStatsReaderIsReadOnly(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(epoch)
	db, tables := statsTables(t, clk)
	r, err := admitteddb.NewStatsReader(db, tables.Stats, clk)
	if err != nil {
		t.Fatal(err)
	}
	m := admitted.Message{Action: admitted.Action, EventID: fixtureEvent, UserID: "late", ExpiresAt: epoch.Add(time.Minute), Timestamp: epoch.Add(-time.Second)}
	if _, err := r.Record(context.Background(), m); err == nil {
		t.Fatal("Record on a stats reader succeeded")
	}
	if n, err := r.AdmittedLastMinute(context.Background(), fixtureEvent); err != nil || n != 7 {
		t.Fatalf("AdmittedLastMinute = %d, %v; want 7", n, err)
	}
	if _, err := admitteddb.NewStatsReader(db, "", clk); err == nil {
		t.Fatal("NewStatsReader accepted an empty table name")
	}
}
