package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestBootstrapRunsFixture runs events/admitted.sqs.json through the built
// bootstrap binary over the Lambda Runtime API, twice, against moto.
func TestBootstrapRunsFixture(t *testing.T) {
	t.Parallel()
	endpoint := testenv.DynamoDB(t)
	db := dynamodb.NewFromConfig(awstest.Config(endpoint))
	id := testenv.UniqueID(t)
	tables := dynamostore.Tables{Processed: id + "-processed", Stats: id + "-stats"}
	ctx := context.Background()
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	payload, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", "admitted.sqs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	poison := ev.Records[len(ev.Records)-1].MessageId

	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/admitted-consumer"), lambdatest.Options{
		FunctionName: "vwr-admitted-consumer",
		Env: map[string]string{
			"VWR_ADMITTED_PROCESSED_TABLE": tables.Processed,
			"VWR_ADMITTED_STATS_TABLE":     tables.Stats,
			"AWS_ENDPOINT_URL":             testenv.Moto(t),
			"AWS_ENDPOINT_URL_DYNAMODB":    endpoint,
			"AWS_ACCESS_KEY_ID":            "testing",
			"AWS_SECRET_ACCESS_KEY":        "testing",
			"AWS_REGION":                   "us-east-1",
		},
	})
	for round := 1; round <= 2; round++ {
		res := fn.Invoke(t, payload)
		if res.Error != nil {
			t.Fatalf("round %d: function error %v; one bad record must not fail the batch\n%s", round, res.Error, fn.Logs())
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(res.Payload, &resp); err != nil {
			t.Fatalf("response %s: %v", res.Payload, err)
		}
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != poison {
			t.Fatalf("round %d: batchItemFailures = %s, want only %s", round, res.Payload, poison)
		}
	}
	store, err := dynamostore.New(db, tables, nil)
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for evID, want := range map[string]int64{"concert-2026": 3, "fan-meeting": 1} {
		if got, err := store.Admitted(ctx, evID, from, to); err != nil || got != want {
			t.Fatalf("%s admitted = %d, %v; want %d", evID, got, err, want)
		}
	}
	if logs := fn.Logs(); !strings.Contains(logs, `"failed":1`) || strings.Contains(logs, "eyJhbGciOiJIUzI1NiJ9.e30") {
		t.Fatalf("logs should report the failure without echoing the poison body:\n%s", logs)
	}
}

func TestBootstrapExitsOnMissingConfig(t *testing.T) {
	t.Parallel()
	fn := lambdatest.Start(t, lambdatest.Build(t, "./lambdas/admitted-consumer"), lambdatest.Options{Env: map[string]string{}})
	if !fn.WaitExit(20 * time.Second) {
		t.Fatal("bootstrap kept running without its tables configured")
	}
	if logs := fn.Logs(); !strings.Contains(logs, "VWR_ADMITTED_PROCESSED_TABLE is required") {
		t.Fatalf("exit logs do not name the missing variable:\n%s", logs)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"ok", map[string]string{"VWR_ADMITTED_PROCESSED_TABLE": "p", "VWR_ADMITTED_STATS_TABLE": "s"}, ""},
		{"missing stats", map[string]string{"VWR_ADMITTED_PROCESSED_TABLE": "p"}, "VWR_ADMITTED_STATS_TABLE is required"},
		{"bad ttl", map[string]string{"VWR_ADMITTED_PROCESSED_TABLE": "p", "VWR_ADMITTED_STATS_TABLE": "s", "VWR_ADMITTED_PROCESSED_TTL": "7d"}, "VWR_ADMITTED_PROCESSED_TTL"},
		{"ttl too short", map[string]string{"VWR_ADMITTED_PROCESSED_TABLE": "p", "VWR_ADMITTED_STATS_TABLE": "s", "VWR_ADMITTED_PROCESSED_TTL": "1h"}, "at least 24h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(tt.env)
			if tt.wantErr == "" {
				if err != nil || c.tables().ProcessedTTL != 7*24*time.Hour || c.tables().StatsTTL != 30*24*time.Hour {
					t.Fatalf("FromEnv = %+v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
