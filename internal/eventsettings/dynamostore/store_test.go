package dynamostore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/dynamotable"
	"github.com/vwr-go/vwr/internal/eventsettings"
	"github.com/vwr-go/vwr/internal/eventsettings/dynamostore"
	"github.com/vwr-go/vwr/internal/eventsettings/settingstest"
	"github.com/vwr-go/vwr/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The conformance suite on moto (or DynamoDB's endpoint under
// make test-localstack), each case on tables of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	settingstest.Run(t, func(t *testing.T) settingstest.Harness {
		db := client(t)
		id := testenv.UniqueID(t)
		if len(id) > 200 {
			id = id[len(id)-200:]
		}
		cfg := dynamostore.Config{EventsTable: "ev-" + id, PositionsTable: "pos-" + id}
		if err := dynamotable.Create(context.Background(), db, cfg.Tables()...); err != nil {
			t.Fatal(err)
		}
		return settingstest.Harness{Store: dynamostore.New(db, cfg), Lose: func(t *testing.T) { emptyTables(t, db, cfg) }}
	})
}

// client is a DynamoDB client of the test endpoint that sends one request
// at a time: moto evaluates a condition and applies an update without a
// lock, while DynamoDB applies each item write atomically.
func client(t *testing.T) *dynamodb.Client {
	t.Helper()
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(testenv.DynamoDB(t)), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		HTTPClient:  &serialClient{client: &http.Client{Timeout: 30 * time.Second}},
	})
}

type serialClient struct {
	mu     sync.Mutex
	client *http.Client
}

func (c *serialClient) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// emptyTables deletes every item of the two tables, as a table restored
// empty would hold.
func emptyTables(t *testing.T, db *dynamodb.Client, cfg dynamostore.Config) {
	t.Helper()
	ctx := context.Background()
	for table, key := range map[string][]string{
		cfg.EventsTable:    {"pk", "sk"},
		cfg.PositionsTable: {"requestId"},
	} {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.LastEvaluatedKey) > 0 {
			t.Fatalf("%s holds more than one scan page", table)
		}
		for _, it := range out.Items {
			k := map[string]types.AttributeValue{}
			for _, name := range key {
				k[name] = it[name]
			}
			if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: k}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// counting counts the Scans and Queries a store sends.
type counting struct {
	dynamostore.API
	scans, queries atomic.Int64
}

func (c *counting) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.scans.Add(1)
	return c.API.Scan(ctx, in, opts...)
}

func (c *counting) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.API.Query(ctx, in, opts...)
}

// TestRefreshQueriesOnePartition: a store written in the older layout (one
// item per event beside Tier 1's, found with a Scan) is migrated by its
// first full read, once; from then on a full read is a Query of the
// settings' partition and never a Scan of the table.
func TestRefreshQueriesOnePartition(t *testing.T) {
	t.Parallel()
	db := client(t)
	id := testenv.UniqueID(t)
	if len(id) > 200 {
		id = id[len(id)-200:]
	}
	cfg := dynamostore.Config{EventsTable: "ev-" + id, PositionsTable: "pos-" + id}
	ctx := context.Background()
	if err := dynamotable.Create(ctx, db, cfg.Tables()...); err != nil {
		t.Fatal(err)
	}
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(cfg.EventsTable), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	s, n := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }, func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	put(map[string]types.AttributeValue{"pk": s("#registry"), "sk": s("queue-version"), "v": n("3"), "gen": s("g1")})
	put(map[string]types.AttributeValue{"pk": s("old"), "sk": s("queue"), "threshold": n("7"), "open": &types.AttributeValueMemberBOOL{Value: true}, "version": n("3"), "epoch": s("e1")})
	put(map[string]types.AttributeValue{"pk": s("old"), "sk": s("event"), "shards": n("4")}) // Tier 1's own item

	c := &counting{API: db}
	store := dynamostore.New(c, cfg)
	want := eventsettings.Settings{Threshold: 7, Open: true, Version: 3, Epoch: "e1"}
	for round := range 2 {
		all, v, err := store.QueueSettings(ctx)
		if err != nil || len(all) != 1 || all["old"] != want || v != (eventsettings.Version{Generation: "g1", N: 3}) {
			t.Fatalf("read %d: %+v, %+v, %v; want old = %+v at g1/3", round, all, v, err, want)
		}
	}
	if c.scans.Load() != 1 || c.queries.Load() != 2 {
		t.Fatalf("two full reads sent %d Scans and %d Queries; want the migration's one Scan, then Queries only", c.scans.Load(), c.queries.Load())
	}
	got, err := store.PutQueueSettings(ctx, "old", eventsettings.Settings{Threshold: 9, Open: true})
	if err != nil || got.Threshold != 9 || got.Epoch != "e1" || got.Version != 4 {
		t.Fatalf("a write after the migration = %+v, %v; want threshold 9, epoch e1 kept, version 4", got, err)
	}
	// Another instance of the older code base: a new store reads the same.
	if all, _, err := dynamostore.New(c, cfg).QueueSettings(ctx); err != nil || all["old"].Threshold != 9 || c.scans.Load() != 1 {
		t.Fatalf("a fresh instance reads %+v, %v after %d Scans; want threshold 9 and no new Scan", all, err, c.scans.Load())
	}
}
