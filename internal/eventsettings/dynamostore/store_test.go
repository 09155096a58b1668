package dynamostore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/dynamotable"
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
