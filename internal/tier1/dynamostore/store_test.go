package dynamostore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/middleware"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fastRetryer keeps the SDK's retry logic but with millisecond backoff and
// no retry quota, so throttling tests do not sleep for seconds.
func fastRetryer(attempts int) func() aws.Retryer {
	return func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		})
	}
}

// serialClient sends one request at a time. moto evaluates a condition and
// applies an update without a lock, so two concurrent requests can
// interleave inside one UpdateItem; DynamoDB applies each item write
// atomically. Serializing requests restores that per-request atomicity,
// while the test's goroutines still interleave between requests, which is
// where the races under test (advancers, counters, idempotency) live.
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

// newStore returns a store on fresh, uniquely named tables in moto. That
// CreateTables finds existing tables and leaves them be is checked once, in
// TestEndpointFromEnvironment (and for every table kind in
// internal/dynamotable), not on each of the suite's ~80 stores.
func newStore(t testing.TB, cfg dynamostore.Config) *dynamostore.Store {
	t.Helper()
	id := testenv.UniqueID(t)
	if len(id) > 200 {
		id = id[len(id)-200:]
	}
	cfg.EventsTable = "ev-" + id
	cfg.PositionsTable = "pos-" + id
	s := openStore(t, cfg)
	if err := s.CreateTables(context.Background()); err != nil {
		t.Fatalf("CreateTables: %v", err)
	}
	return s
}

// openStore returns a store on cfg's tables in moto: another Lambda
// instance, with its own memory, when the tables exist already. Pass a
// store's Config() to share its serialClient: requests to one table must
// not overlap in moto (see serialClient).
func openStore(t testing.TB, cfg dynamostore.Config) *dynamostore.Store {
	t.Helper()
	cfg.Endpoint = testenv.DynamoDB(t)
	cfg.Region = "us-east-1"
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &serialClient{client: &http.Client{Timeout: 30 * time.Second}}
	}
	if cfg.Retryer == nil {
		cfg.Retryer = fastRetryer(3)
	}
	cfg.Credentials = credentials.NewStaticCredentialsProvider("testing", "testing", "")
	s, err := dynamostore.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dynamostore.New: %v", err)
	}
	return s
}

func TestConformanceMoto(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) tier1.Store {
		t.Helper()
		return newStore(t, dynamostore.Config{})
	}, storetest.Options{SaleTickets: storetest.SmallSaleTickets})
}

func TestCounterCountsPerItem(t *testing.T) {
	t.Parallel()
	counter := dynamostore.NewCounter()
	store := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
	ctx := context.Background()
	event := testenv.UniqueID(t)
	if err := store.Configure(ctx, event, tier1.Settings{Active: true, Shards: 2, BatchSize: 5}, storetest.Epoch); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	for range 3 {
		if _, _, err := store.Assign(ctx, tier1.NewPosition{EventID: event, Shard: 1, Shards: 2, RequestID: tier1.NewRequestID(), Now: storetest.Epoch, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Snapshot(ctx, event); err != nil {
		t.Fatal(err)
	}
	st := counter.Stats()
	if st.Writes != 6 || st.Reads != 3 {
		t.Fatalf("stats = %+v, want 6 writes (3 ADD + 3 records) and 3 reads (event + 2 shards)", st)
	}
	shard := store.Config().EventsTable + "/pk=" + event + "#s01"
	if top := st.Items[0]; top.Key != shard+"/sk=shard" || top.Writes != 3 || top.Reads != 1 {
		t.Fatalf("hottest item = %+v, want %s/sk=shard with 3 writes and 1 read", top, shard)
	}
	if share := st.HottestWriteShare(); share != 0.5 {
		t.Fatalf("hottest share = %v, want 0.5", share)
	}
	if top := st.Partitions[0]; top.Key != shard || top.Writes != 3 || top.Reads != 1 {
		t.Fatalf("hottest partition = %+v, want %s with 3 writes and 1 read", top, shard)
	}
	if share := st.HottestPartitionWriteShare(); share != 0.5 {
		t.Fatalf("hottest partition share = %v, want 0.5", share)
	}
	// Every position record is its own partition; the event item and the
	// other shard were read once each, on partitions of their own.
	if n := len(st.Partitions); n != 3+3 {
		t.Fatalf("%d partitions touched, want 6: %+v", n, st.Partitions)
	}
	if got := fmt.Sprint(st.Calls); got != "map[BatchGetItem:1 PutItem:3 UpdateItem:3]" {
		t.Fatalf("calls = %s", got)
	}
	counter.Reset()
	if st := counter.Stats(); st.Writes != 0 || len(st.Items) != 0 {
		t.Fatalf("after Reset: %+v", st)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("VWR_TIER1_EVENTS_TABLE", "")
	t.Setenv("VWR_TIER1_POSITIONS_TABLE", "")
	c, err := dynamostore.FromEnv()
	if err != nil || c.EventsTable != dynamostore.DefaultEventsTable || c.PositionsTable != dynamostore.DefaultPositionsTable {
		t.Fatalf("defaults = %+v, %v", c, err)
	}
	t.Setenv("VWR_TIER1_EVENTS_TABLE", "same")
	t.Setenv("VWR_TIER1_POSITIONS_TABLE", "same")
	if _, err := dynamostore.FromEnv(); err == nil || !strings.Contains(err.Error(), "VWR_TIER1_EVENTS_TABLE") {
		t.Fatalf("same table twice: %v, want an error naming the variable", err)
	}
}

// Without an explicit endpoint the SDK's loader honours AWS_ENDPOINT_URL,
// which is how moto and LocalStack are reached outside tests.
func TestEndpointFromEnvironment(t *testing.T) {
	testenv.AWSEnv(t, testenv.Moto(t))
	id := testenv.UniqueID(t)
	s, err := dynamostore.New(context.Background(), dynamostore.Config{EventsTable: "ev-" + id, PositionsTable: "pos-" + id})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.CreateTables(ctx); err != nil {
		t.Fatalf("CreateTables via AWS_ENDPOINT_URL: %v", err)
	}
	if err := s.Configure(ctx, "ev", tier1.Settings{Active: true, Shards: 1, BatchSize: 1}, storetest.Epoch); err != nil {
		t.Fatal(err)
	}
	// Again on the existing tables (vwr local's every start on DynamoDB):
	// it leaves them and their items be.
	if err := s.CreateTables(ctx); err != nil {
		t.Fatalf("CreateTables a second time: %v", err)
	}
	if snap, err := s.Snapshot(ctx, "ev"); err != nil || !snap.Found {
		t.Fatalf("Snapshot = %+v, %v", snap, err)
	}
}

// TestStatusPollsShareOneRead measures what a crowd of waiting pages costs
// the table: every status poll a Lambda instance answers within the cache
// TTL (≤ 1 s) is served from one strongly consistent BatchGetItem of the
// event item and its 4 shards, however many visitors poll at once, and the
// next second costs one more.
func TestStatusPollsShareOneRead(t *testing.T) {
	t.Parallel()
	counter := dynamostore.NewCounter()
	store := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
	clk := clock.NewManual(storetest.Epoch)
	svc := tier1.New(store, storetest.Keys(t), clk, tier1.Config{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	event := testenv.UniqueID(t)
	if _, err := svc.Activate(ctx, event, 4, 10); err != nil {
		t.Fatal(err)
	}
	const pollers = 200
	poll := func(wantServing int64) {
		t.Helper()
		counter.Reset()
		var wg sync.WaitGroup
		for range pollers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := svc.Status(ctx, event)
				if err != nil || !st.Active || st.ServingCounter != wantServing {
					t.Errorf("Status = %+v, %v; want active, serving %d", st, err, wantServing)
				}
			}()
		}
		wg.Wait()
		if st := counter.Stats(); fmt.Sprint(st.Calls) != "map[BatchGetItem:1]" || st.Reads != 5 || st.Writes != 0 {
			t.Fatalf("%d concurrent status polls cost %v: %d item reads and %d writes, want one BatchGetItem of 5 items", pollers, st.Calls, st.Reads, st.Writes)
		}
	}
	clk.Advance(time.Second)
	poll(0)
	for range 3 {
		if _, err := svc.Assign(ctx, event, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.AdvanceBy(ctx, event, 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	poll(2)
}
