package dynamostore_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/tier1"
	"github.com/vwr-go/vwr/internal/tier1/dynamostore"
	"github.com/vwr-go/vwr/internal/tier1/storetest"
)

// positionsItems scans the positions table for items whose key starts with prefix.
func positionsItems(t *testing.T, s *dynamostore.Store, prefix string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := rawClient(t).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.Config().PositionsTable)})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	var mine []map[string]types.AttributeValue
	for _, it := range out.Items {
		if id, ok := it["requestId"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(id.Value, prefix) {
			mine = append(mine, it)
		}
	}
	return mine
}

func attrN(t *testing.T, it map[string]types.AttributeValue, name string) string {
	t.Helper()
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item %v has no number %s", it, name)
	}
	return n.Value
}

// TestDoorRecordsCarryTheirTTL: a spent solution is one item of three small
// attributes whose TTL is the challenge's expiry, and a client's counter
// expires at its window's end, on the table's TTL attribute; neither keeps
// the Idempotency-Key or the client's address.
func TestDoorRecordsCarryTheirTTL(t *testing.T) {
	t.Parallel()
	s := newStore(t, dynamostore.Config{})
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	exp := storetest.Epoch.Add(5 * time.Minute)
	for i := range 3 {
		sol := tier1.Solution{EventID: ev, Challenge: fmt.Sprintf("%064x", i), KeyHash: tier1.KeyHash(ev, "secret-key"), Expires: exp, Now: storetest.Epoch}
		if got, err := s.SpendSolution(ctx, sol); err != nil || got != tier1.SpendFirst {
			t.Fatalf("spend %d: %v, %v", i, got, err)
		}
		if got, err := s.SpendSolution(ctx, sol); err != nil || got != tier1.SpendRetry {
			t.Fatalf("retry %d: %v, %v", i, got, err)
		}
	}
	spent := positionsItems(t, s, "pow#"+ev+"#")
	if len(spent) != 3 {
		t.Fatalf("%d spent items for 3 solutions (each spent twice), want 3", len(spent))
	}
	for _, it := range spent {
		if len(it) != 3 || attrN(t, it, "ttl") != fmt.Sprint(exp.Unix()) {
			t.Errorf("spent item %v: want requestId, k and ttl = %d", it, exp.Unix())
		}
		if k := it["k"].(*types.AttributeValueMemberS).Value; len(k) != 32 || strings.Contains(k, "secret") {
			t.Errorf("spent item keeps %q: want the key's 32-digit hash", k)
		}
	}
	end := storetest.Epoch.Add(10 * time.Minute)
	client := strings.Repeat("c", 32)
	if _, ok, err := s.CountArrival(ctx, tier1.ArrivalCount{EventID: ev, Client: client, Window: 9, Limit: 5, Expires: end, Now: storetest.Epoch}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	counters := positionsItems(t, s, "client#"+ev+"#")
	if len(counters) != 1 || len(counters[0]) != 3 || attrN(t, counters[0], "ttl") != fmt.Sprint(end.Unix()) || attrN(t, counters[0], "n") != "1" {
		t.Fatalf("counter items %v: want one {requestId, n: 1, ttl: %d}", counters, end.Unix())
	}
	ttl, err := rawClient(t).DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.Config().PositionsTable)})
	if err != nil || ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Fatalf("positions table TTL = %+v, %v: the door's items would never go", ttl.TimeToLiveDescription, err)
	}
}

// TestDoorWritesPerArrival counts what a paid, bounded arrival costs the
// tables, item by item: one spent record and one counter write, each on a
// partition of its own in the positions table, on top of the position's
// own writes, and the claim of the spent record once the count let the
// arrival in; a second refusal from the same address costs only the spend.
func TestDoorWritesPerArrival(t *testing.T) {
	t.Parallel()
	counter := dynamostore.NewCounter()
	store := newStore(t, dynamostore.Config{APIOptions: []func(*middleware.Stack) error{counter.Register}})
	clk := clock.NewManual(storetest.Epoch)
	cfg := tier1.Config{Logger: slog.New(slog.DiscardHandler)}
	cfg.Pow.Keys = [][]byte{storetest.PowKey}
	cfg.Clients = tier1.ClientBound{Limit: 1, Window: 10 * time.Minute}
	svc := tier1.New(store, storetest.Keys(t), clk, cfg)
	ctx := context.Background()
	ev := testenv.UniqueID(t)
	if _, err := svc.Activate(ctx, ev, 4, 10, tier1.WithPow(storetest.TestPow)); err != nil {
		t.Fatal(err)
	}
	fresh := func() string {
		t.Helper()
		_, err := svc.Enter(ctx, tier1.Arrival{EventID: ev})
		pe, ok := err.(*tier1.PowError)
		if !ok {
			t.Fatalf("no solution: %v", err)
		}
		return storetest.Solve(t, pe.Challenge)
	}
	me := tier1.Arrival{EventID: ev, IdempotencyKey: "k1", Client: "192.0.2.1:5000", HasClient: true, ClientWithPort: true, Altcha: fresh()}
	counter.Reset()
	if _, err := svc.Enter(ctx, me); err != nil {
		t.Fatal(err)
	}
	st := counter.Stats()
	// Spend unclaimed (PutItem), count (UpdateItem), claim (UpdateItem on
	// the spent record), then the position as before: the key's read
	// (GetItem), the shard's ADD (UpdateItem), the idempotency and position
	// records (PutItem ×2). The snapshot came from the 428's read.
	if got := fmt.Sprint(st.Calls); got != "map[GetItem:1 PutItem:3 UpdateItem:3]" || st.Writes != 6 {
		t.Fatalf("a paid arrival cost %s (%d writes), want GetItem:1 PutItem:3 UpdateItem:3", got, st.Writes)
	}
	for _, p := range st.Partitions {
		if want := int64(1 + strings.Count(p.Key, "=pow#")); p.Writes != want {
			t.Errorf("partition %s took %d writes of one arrival, want %d; every item should be on its own", p.Key, p.Writes, want)
		}
	}
	me.IdempotencyKey, me.Altcha = "k2", fresh()
	counter.Reset()
	if _, err := svc.Enter(ctx, me); err == nil {
		t.Fatal("second arrival over a bound of 1 was let in")
	}
	if got := fmt.Sprint(counter.Stats().Calls); got != "map[PutItem:1 UpdateItem:1]" {
		t.Fatalf("the first refusal cost %s, want the spend and one refused counter write", got)
	}
	me.IdempotencyKey, me.Altcha = "k3", fresh()
	counter.Reset()
	if _, err := svc.Enter(ctx, me); err == nil {
		t.Fatal("third arrival over a bound of 1 was let in")
	}
	if got := fmt.Sprint(counter.Stats().Calls); got != "map[PutItem:1]" {
		t.Fatalf("a later refusal cost %s, want only the spend (the instance remembers the client is over)", got)
	}
}
