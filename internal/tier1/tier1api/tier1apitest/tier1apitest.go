// Package tier1apitest prepares what a test of a Tier 1 Lambda binary needs:
// DynamoDB tables on the test binary's moto server (created by dynamostore,
// unique per test), a Service on them for arranging and checking state, the
// environment the bootstrap reads, and the events/ fixtures.
package tier1apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/lambdatest"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/token"
)

// FixtureEvent is the event id in every events/*.json file.
const FixtureEvent = "concert-2026"

// FixtureRequestID is the requestId in events/check.apigw.json.
const FixtureRequestID = "Hk3vQ9zR2mN8pL4wX7yT1A"

// Stack is one test's Tier 1 backend on moto.
type Stack struct {
	// Env is the function environment for lambdatest.Options.Env.
	Env     map[string]string
	Service *tier1.Service
	Keys    *token.KeyRing
	Store   *dynamostore.Store
}

// Now is the wall clock the functions under test use.
func (s *Stack) Now() time.Time { return time.Now() }

// Moto creates fresh tables on moto and returns the stack around them.
func Moto(t *testing.T) *Stack {
	t.Helper()
	endpoint := testenv.Moto(t)
	id := testenv.UniqueID(t)
	cfg := dynamostore.Config{EventsTable: "ev-" + id, PositionsTable: "pos-" + id}
	if len(cfg.EventsTable) > 255 {
		t.Fatalf("table name too long: %s", cfg.EventsTable)
	}
	db := dynamodb.NewFromConfig(awstest.Config(endpoint))
	store := dynamostore.NewWithClient(db, cfg)
	if err := store.CreateTables(context.Background()); err != nil {
		t.Fatalf("create tables on moto: %v", err)
	}
	secret := token.RandomSecret()
	keys, err := token.NewKeyRing("t1", []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return &Stack{
		Env: map[string]string{
			"AWS_ENDPOINT_URL":          endpoint,
			"AWS_ACCESS_KEY_ID":         "testing",
			"AWS_SECRET_ACCESS_KEY":     "testing",
			"AWS_REGION":                "us-east-1",
			"VWR_TIER1_STORE":           "dynamodb",
			"VWR_TIER1_EVENTS_TABLE":    cfg.EventsTable,
			"VWR_TIER1_POSITIONS_TABLE": cfg.PositionsTable,
			"VWR_TIER1_TOKEN_KEYS":      "t1:" + secret,
		},
		Service: tier1.New(store, keys, clock.System{}, tier1.Config{}),
		Keys:    keys,
		Store:   store,
	}
}

// Fixture returns events/<name> as bytes, with each pair of replacements
// (old, new) applied, e.g. FixtureRequestID → a real requestId.
func Fixture(t testing.TB, name string, replace ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	if len(replace)%2 != 0 {
		t.Fatal("tier1apitest: replacements come in pairs")
	}
	for i := 0; i < len(replace); i += 2 {
		if !bytes.Contains(b, []byte(replace[i])) {
			t.Fatalf("fixture %s has no %q to replace", name, replace[i])
		}
		b = bytes.ReplaceAll(b, []byte(replace[i]), []byte(replace[i+1]))
	}
	return b
}

// HTTPResponse decodes a function's answer as an HTTP API v2 response,
// failing the test on a function error.
func HTTPResponse(t testing.TB, fn *lambdatest.Function, res lambdatest.Result) events.APIGatewayV2HTTPResponse {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("function error %v\nlogs:\n%s", res.Error, fn.Logs())
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.Payload, &resp); err != nil {
		t.Fatalf("decode response %q: %v", res.Payload, err)
	}
	return resp
}

// Body decodes a response body into T.
func Body[T any](t testing.TB, resp events.APIGatewayV2HTTPResponse) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
		t.Fatalf("decode body %d %q: %v", resp.StatusCode, resp.Body, err)
	}
	return v
}

// LogLines returns the JSON log lines of a function that carry key.
func LogLines(fn *lambdatest.Function, key string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(fn.Logs(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			if _, ok := m[key]; ok {
				out = append(out, m)
			}
		}
	}
	return out
}
