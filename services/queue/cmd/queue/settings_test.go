package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/vwr-go/vwr/internal/dynamotable"
	"github.com/vwr-go/vwr/internal/eventsettings/dynamostore"
	"github.com/vwr-go/vwr/internal/testenv"
)

// TestConfiguredEventsFromTheTier1Store runs the binary as deployed
// (QUEUE_OPEN_EVENTS unset, so false) on each backend Tier 1 runs on: an unconfigured
// event is 404 unknown_event, a threshold set through the admin API opens it
// and is what the binary enforces.
func TestConfiguredEventsFromTheTier1Store(t *testing.T) {
	t.Parallel()
	moto, dynamo := testenv.Moto(t), testenv.DynamoDB(t)
	tests := []struct {
		name string
		env  func(t *testing.T) []string
	}{
		{"redis", func(t *testing.T) []string {
			return []string{"VWR_TIER1_STORE=redis", "VWR_TIER1_REDIS_URL=redis://" + testenv.Redis(t) + "/1"}
		}},
		{"dynamodb", func(t *testing.T) []string {
			id := testenv.UniqueID(t)
			cfg := dynamostore.Config{EventsTable: "ev-" + id, PositionsTable: "pos-" + id}
			db := dynamodb.New(dynamodb.Options{BaseEndpoint: aws.String(dynamo), Region: "us-east-1",
				Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})
			if err := dynamotable.Create(context.Background(), db, cfg.Tables()...); err != nil {
				t.Fatal(err)
			}
			return []string{"VWR_TIER1_STORE=dynamodb", "VWR_TIER1_EVENTS_TABLE=" + cfg.EventsTable, "VWR_TIER1_POSITIONS_TABLE=" + cfg.PositionsTable,
				"AWS_ENDPOINT_URL=" + moto, "AWS_ENDPOINT_URL_DYNAMODB=" + dynamo, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_REGION=us-east-1"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := start(t, append(tc.env(t), "QUEUE_OPEN_EVENTS=false", "QUEUE_ADMIN_TOKEN=adm", "QUEUE_ADMISSION_INTERVAL_MS=50")...)
			ev := testenv.UniqueID(t)
			if code, body := call(t, p, "POST", "/api/queue/check/"+ev, "alice"); code != http.StatusNotFound || body["code"] != "unknown_event" {
				t.Fatalf("unconfigured event = %d %v\n%s", code, body, p.stderr.String())
			}
			req, _ := http.NewRequest("PUT", "http://"+p.addr+"/api/queue/admin/threshold/"+ev, strings.NewReader(`{"threshold":1}`))
			req.Header.Set("Authorization", "Bearer adm")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("set threshold = %d\n%s", resp.StatusCode, p.stderr.String())
			}
			if _, body := call(t, p, "POST", "/api/queue/check/"+ev, "alice"); body["status"] != "active" || body["threshold"] != float64(1) {
				t.Fatalf("alice = %v", body)
			}
			if _, body := call(t, p, "POST", "/api/queue/check/"+ev, "bob"); body["status"] != "queued" {
				t.Fatalf("bob = %v (threshold 1 is full)", body)
			}
		})
	}
}
