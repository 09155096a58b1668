package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

// rawClient is a plain client on moto, for fixtures and inspection.
func rawClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(awstest.Config(testenv.DynamoDB(t)))
}

// eventsItem is an events-table item as the tests inspect it.
type eventsItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	C      int64  `dynamodbav:"c"`
	N      int    `dynamodbav:"n"`
	Shards int    `dynamodbav:"shards"`
	Layout int    `dynamodbav:"layout"`
}

// eventItems scans the events table for the event's items (its event item
// and shard items under either layout).
func eventItems(t *testing.T, s *dynamostore.Store, eventID string) []eventsItem {
	t.Helper()
	out, err := rawClient(t).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.Config().EventsTable)})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	var all, mine []eventsItem
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &all); err != nil {
		t.Fatalf("decode scan: %v", err)
	}
	for _, it := range all {
		if it.PK == eventID || strings.HasPrefix(it.PK, eventID+"#") {
			mine = append(mine, it)
		}
	}
	sort.Slice(mine, func(i, j int) bool { // the event item first, then by key
		a, b := mine[i], mine[j]
		if (a.PK == eventID) != (b.PK == eventID) {
			return a.PK == eventID
		}
		return a.PK+"/"+a.SK < b.PK+"/"+b.SK
	})
	return mine
}

func TestShardsHaveOwnPartitions(t *testing.T) {
	t.Parallel()
	counter := dynamostore.NewCounter()
	store := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
	ctx := context.Background()
	event := testenv.UniqueID(t)
	const shards = 16
	if err := store.Configure(ctx, event, tier1.Settings{Active: true, Shards: shards, BatchSize: 5}, storetest.Epoch); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	for k := range shards {
		if _, _, err := store.Assign(ctx, tier1.NewPosition{EventID: event, Shard: k, Shards: shards, RequestID: tier1.NewRequestID(), Now: storetest.Epoch, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	items := eventItems(t, store, event)
	if len(items) != 1+shards {
		t.Fatalf("%d items, want the event item and %d shards: %+v", len(items), shards, items)
	}
	if ev := items[0]; ev.PK != event || ev.SK != "event" || ev.Layout != 2 || ev.Shards != shards {
		t.Fatalf("event item = %+v", ev)
	}
	for k, it := range items[1:] {
		if want := fmt.Sprintf("%s#s%02d", event, k); it.PK != want || it.SK != "shard" || it.C != 1 || it.N != shards {
			t.Errorf("shard %d = %+v, want pk %s, sk shard, c 1, n %d", k, it, want, shards)
		}
	}
	// 16 ADDs on 16 shard partitions and 16 records on 16 more: no
	// partition took more than one write.
	st := counter.Stats()
	if st.Writes != 2*shards || len(st.Partitions) != 2*shards || st.Partitions[0].Writes != 1 {
		t.Fatalf("writes %d over %d partitions, hottest %+v; want %d writes, one per partition", st.Writes, len(st.Partitions), st.Partitions[0], 2*shards)
	}
}

// TestSnapshotRoundTrips: a warm snapshot is one BatchGetItem; only an
// unknown event or a changed shard count costs a second call for the
// missing shards.
func TestSnapshotRoundTrips(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// before configures the event on the reader (warm) or on another
		// store (the reader is cold or remembers an old count).
		first, then int
		warm        bool
		calls       int
		reads       int
	}{
		{name: "warm", first: 4, then: 4, warm: true, calls: 1, reads: 5},
		{name: "cold", first: 4, then: 4, calls: 2, reads: 5},
		{name: "count shrank elsewhere", first: 4, then: 2, warm: true, calls: 1, reads: 5},
		{name: "count grew elsewhere", first: 2, then: 6, warm: true, calls: 2, reads: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			counter := dynamostore.NewCounter()
			reader := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
			cfg := reader.Config()
			cfg.APIOptions = nil // count the reader's calls only
			other := openStore(t, cfg)
			ctx := context.Background()
			event := testenv.UniqueID(t)
			first := other
			if tc.warm {
				first = reader
			}
			if err := first.Configure(ctx, event, tier1.Settings{Active: true, Shards: tc.first, BatchSize: 5}, storetest.Epoch); err != nil {
				t.Fatal(err)
			}
			if tc.then != tc.first {
				if err := other.Configure(ctx, event, tier1.Settings{Active: true, Shards: tc.then, BatchSize: 5}, storetest.Epoch); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := other.Assign(ctx, tier1.NewPosition{EventID: event, Shard: tc.then - 1, Shards: tc.then, RequestID: tier1.NewRequestID(), Now: storetest.Epoch, TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			counter.Reset()
			snap, err := reader.Snapshot(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Counters) != tc.then || snap.Counters[tc.then-1] != 1 || tier1.Assigned(snap.Counters, tc.then) != 1 {
				t.Fatalf("counters = %v, want %d shards with one position on the last", snap.Counters, tc.then)
			}
			st := counter.Stats()
			if st.Calls["BatchGetItem"] != int64(tc.calls) || len(st.Calls) != 1 || st.Reads != int64(tc.reads) {
				t.Fatalf("snapshot cost %v and %d item reads, want %d BatchGetItem and %d reads", st.Calls, st.Reads, tc.calls, tc.reads)
			}
			counter.Reset()
			if _, err := reader.Snapshot(ctx, event); err != nil {
				t.Fatal(err)
			}
			if st := counter.Stats(); st.Calls["BatchGetItem"] != 1 || st.Reads != int64(tc.then+1) {
				t.Fatalf("the next snapshot cost %v and %d reads, want one BatchGetItem of %d items", st.Calls, st.Reads, tc.then+1)
			}
		})
	}
}

// unprocessing is an API that serves at most `serve` keys per BatchGetItem
// (serve < 0: all) and returns the rest as UnprocessedKeys, as DynamoDB does
// when a partition is over its throughput.
type unprocessing struct {
	dynamostore.API
	mu           sync.Mutex
	serve        int
	calls        int
	inconsistent int // requests without ConsistentRead
}

func (u *unprocessing) set(serve int) {
	u.mu.Lock()
	u.serve, u.calls, u.inconsistent = serve, 0, 0
	u.mu.Unlock()
}

func (u *unprocessing) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	u.mu.Lock()
	u.calls++
	serve := u.serve
	for _, ka := range in.RequestItems {
		if !aws.ToBool(ka.ConsistentRead) {
			u.inconsistent++
		}
	}
	u.mu.Unlock()
	if serve < 0 {
		return u.API.BatchGetItem(ctx, in, opts...)
	}
	served := map[string]types.KeysAndAttributes{}
	unprocessed := map[string]types.KeysAndAttributes{}
	for table, ka := range in.RequestItems {
		n := min(serve, len(ka.Keys))
		if n > 0 {
			part := ka
			part.Keys = ka.Keys[:n]
			served[table] = part
		}
		if n < len(ka.Keys) {
			rest := ka
			rest.Keys = ka.Keys[n:]
			unprocessed[table] = rest
		}
	}
	out := &dynamodb.BatchGetItemOutput{}
	if len(served) > 0 {
		var err error
		if out, err = u.API.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: served}, opts...); err != nil {
			return nil, err
		}
	}
	out.UnprocessedKeys = unprocessed
	return out, nil
}

func TestUnprocessedKeysAreRetried(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		serve   int
		calls   int
		wantErr error
	}{
		{name: "all processed", serve: -1, calls: 1},
		{name: "one key per call", serve: 1, calls: 4},
		{name: "two keys per call", serve: 2, calls: 2},
		{name: "never processed", serve: 0, calls: 5, wantErr: tier1.ErrThrottled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := newStore(t, dynamostore.Config{})
			api := &unprocessing{API: rawClient(t), serve: -1}
			store := dynamostore.NewWithClient(api, base.Config())
			ctx := context.Background()
			event := testenv.UniqueID(t)
			if err := store.Configure(ctx, event, tier1.Settings{Active: true, Shards: 3, BatchSize: 5}, storetest.Epoch); err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{0, 2, 2} {
				if _, _, err := store.Assign(ctx, tier1.NewPosition{EventID: event, Shard: k, Shards: 3, RequestID: tier1.NewRequestID(), Now: storetest.Epoch, TTL: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			api.set(tc.serve)
			snap, err := store.Snapshot(ctx, event)
			if api.calls != tc.calls || api.inconsistent != 0 {
				t.Errorf("BatchGetItem calls = %d (%d not strongly consistent), want %d", api.calls, api.inconsistent, tc.calls)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, tier1.ErrUnavailable) {
					t.Fatalf("Snapshot = %+v, %v; want %v", snap, err, tc.wantErr)
				}
				return
			}
			if err != nil || !snap.Found || fmt.Sprint(snap.Counters) != "[1 0 2]" {
				t.Fatalf("Snapshot = %+v, %v; want counters [1 0 2]", snap, err)
			}
		})
	}
}

// TestRacingConfiguresLeaveOneShardCount: shard-count changes racing on a
// fresh event (no position handed out, so every count is allowed) leave the
// event item and exactly its shards 0..n-1, all of count n. The event
// item's condition on the count just read sends the losers back to read
// again.
func TestRacingConfiguresLeaveOneShardCount(t *testing.T) {
	t.Parallel()
	base := newStore(t, dynamostore.Config{})
	ctx := context.Background()
	event := testenv.UniqueID(t)
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := openStore(t, base.Config()) // its own memory, like another Lambda
			errs <- s.Configure(ctx, event, tier1.Settings{Active: true, Shards: 1 + i%6*3, BatchSize: 5}, storetest.Epoch)
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, tier1.ErrUnavailable):
			t.Errorf("racing Configure: %v, want success or ErrUnavailable (raced too often)", err)
		}
	}
	if ok == 0 {
		t.Fatal("no Configure succeeded")
	}
	snap, err := openStore(t, base.Config()).Snapshot(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	n := snap.Event.Shards
	items := eventItems(t, base, event)
	if len(items) != 1+n {
		t.Fatalf("%d items for a %d-shard event: %+v", len(items), n, items)
	}
	for k, it := range items[1:] {
		if want := fmt.Sprintf("%s#s%02d", event, k); it.PK != want || it.N != n {
			t.Errorf("shard item %+v, want pk %s with n %d", it, want, n)
		}
	}
}

// putLegacyEvent writes an event as vwr wrote it before the shards had
// their own partition keys: no layout attribute, shard k at pk=<eventId>,
// sk=shard#NN.
func putLegacyEvent(t testing.TB, s *dynamostore.Store, eventID string, counters []int64) {
	t.Helper()
	db := rawClient(t)
	ctx := context.Background()
	put := func(item map[string]any) {
		t.Helper()
		av, err := attributevalue.MarshalMap(item)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Config().EventsTable), Item: av}); err != nil {
			t.Fatal(err)
		}
	}
	put(map[string]any{
		"pk": eventID, "sk": "event", "active": true, "paused": false, "shards": len(counters),
		"batchSize": 10, "servingCounter": 0, "updatedAt": storetest.Epoch.UnixMilli(), "tickSlot": 0,
		"advances": []any{},
	})
	for k, c := range counters {
		put(map[string]any{"pk": eventID, "sk": fmt.Sprintf("shard#%02d", k), "c": c, "n": len(counters)})
	}
	reg, err := attributevalue.MarshalMap(struct {
		PK  string   `dynamodbav:"pk"`
		SK  string   `dynamodbav:"sk"`
		IDs []string `dynamodbav:"ids,stringset"`
	}{"#registry", "active", []string{eventID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Config().EventsTable), Item: reg}); err != nil {
		t.Fatal(err)
	}
}

// TestLegacyEventKeepsWorkingAndMigrates: an event written with every shard
// under the event's partition key is read and served as it is, and its next
// Configure moves the shards to their own partition keys while enters from
// two stores (one that still remembers the old layout) keep coming. No
// position is handed out twice and each shard's positions stay contiguous.
func TestLegacyEventKeepsWorkingAndMigrates(t *testing.T) {
	t.Parallel()
	counter := dynamostore.NewCounter()
	a := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
	cfgB := a.Config()
	cfgB.APIOptions = nil // count a's calls only
	b := openStore(t, cfgB)
	ctx := context.Background()
	event := testenv.UniqueID(t)
	const shards = 4
	legacy := []int64{3, 0, 2, 5}
	putLegacyEvent(t, a, event, legacy)
	var all []tier1.Position // every position handed out, the legacy ones too
	for k, c := range legacy {
		for i := range c {
			all = append(all, tier1.Position{Shard: k, Position: tier1.StridedPosition(k, shards, i+1)})
		}
	}

	clk := clock.NewManual(storetest.Epoch)
	quiet := tier1.Config{Logger: slog.New(slog.DiscardHandler)}
	admin := tier1.New(a, storetest.Keys(t), clk, quiet)
	st, err := admin.AdminStatus(ctx, event)
	if err != nil || !st.Active || fmt.Sprint(st.ShardCounters) != "[3 0 2 5]" {
		t.Fatalf("AdminStatus of the legacy event = %+v, %v", st, err)
	}
	var mu sync.Mutex
	enter := func(svc *tier1.Service, n int) error {
		for range n {
			r, err := svc.Assign(ctx, event, "")
			if err != nil {
				return err
			}
			if !r.Active {
				return fmt.Errorf("enter passed through: %+v", r)
			}
			mu.Lock()
			all = append(all, tier1.Position{Shard: int((r.Position - 1) % shards), Position: r.Position})
			mu.Unlock()
		}
		return nil
	}
	svcA, svcB := tier1.New(a, storetest.Keys(t), clk, quiet), tier1.New(b, storetest.Keys(t), clk, quiet)
	// Before any Configure the legacy shards serve the enters.
	if err := enter(svcB, 8); err != nil {
		t.Fatal(err)
	}
	for _, it := range eventItems(t, a, event) {
		if strings.Contains(it.PK, "#") {
			t.Fatalf("an enter created %+v before the migration", it)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, svc := range []*tier1.Service{svcA, svcB, svcA, svcB} {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- enter(svc, 12) }()
	}
	if _, err := admin.Pause(ctx, event); err != nil { // migrates
		t.Fatalf("Pause (migration): %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("enter during the migration: %v", err)
		}
	}
	if err := enter(svcB, 8); err != nil { // b may still remember the old layout
		t.Fatal(err)
	}

	snap, err := a.Snapshot(ctx, event)
	if err != nil || !snap.Event.Paused {
		t.Fatalf("Snapshot after migration = %+v, %v", snap, err)
	}
	storetest.CheckStrided(t, all, shards, snap.Counters)
	if got, want := tier1.Assigned(snap.Counters, shards), int64(10+8+48+8); got != want {
		t.Fatalf("assigned = %d, want %d", got, want)
	}
	// The event item (layout 2), the fenced legacy shards (n = 0, refusing
	// every ADD) and the shards on their own keys.
	items := eventItems(t, a, event)
	if len(items) != 1+2*shards || items[0].Layout != 2 {
		t.Fatalf("after migration: %+v, want the event item (layout 2), %d fenced legacy shards and %d shards on their own keys", items, shards, shards)
	}
	for k := range shards {
		old, own := items[1+k], items[1+shards+k]
		if old.PK != event || old.SK != fmt.Sprintf("shard#%02d", k) || old.N != 0 || old.C > snap.Counters[k] || old.C < legacy[k] {
			t.Errorf("legacy shard %d = %+v, want fenced (n 0) with its count at the move", k, old)
		}
		if want := fmt.Sprintf("%s#s%02d", event, k); own.PK != want || own.SK != "shard" || own.C != snap.Counters[k] || own.N != shards {
			t.Errorf("shard %d = %+v, want pk %s, c %d, n %d", k, own, want, snap.Counters[k], shards)
		}
	}
	counter.Reset()
	if _, err := a.Snapshot(ctx, event); err != nil {
		t.Fatal(err)
	}
	if st := counter.Stats(); st.Calls["BatchGetItem"] != 1 || st.Reads != 1+shards {
		t.Fatalf("snapshot after migration cost %v, %d reads; want one BatchGetItem of %d items", st.Calls, st.Reads, 1+shards)
	}
}
