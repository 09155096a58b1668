package dynamostore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/admitted/dynamostore"
	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/testenv"
	"github.com/vwr-go/vwr/internal/testenv/awstest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func client(t *testing.T) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(awstest.Config(testenv.DynamoDB(t)))
}

func msg(user string, at time.Time) admitted.Message {
	return admitted.Message{Action: admitted.Action, EventID: "ev-1", UserID: user, ExpiresAt: at.Add(10 * time.Minute), Timestamp: at}
}

// TestClaimAndCountCommitTogether: when the count cannot be written, the
// claim is not left behind either, so the redelivery counts the admission.
// With a separate PutItem then UpdateItem, the retry would find the claim and
// the admission would never be counted.
func TestClaimAndCountCommitTogether(t *testing.T) {
	t.Parallel()
	db := client(t)
	ctx := context.Background()
	id := testenv.UniqueID(t)
	good := dynamostore.Tables{Processed: id + "-processed", Stats: id + "-stats"}
	if err := dynamostore.CreateTables(ctx, db, good); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	m := msg("u-1", clk.Now())

	broken, err := dynamostore.New(db, dynamostore.Tables{Processed: good.Processed, Stats: id + "-missing"}, clk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broken.Record(ctx, m); err == nil {
		t.Fatal("Record into a missing stats table succeeded")
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(good.Processed),
		Key:       map[string]types.AttributeValue{dynamostore.AttrID: &types.AttributeValueMemberS{Value: dynamostore.ProcessedKey(m)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) != 0 {
		t.Fatalf("claim written although the count failed: %v", out.Item)
	}

	store, err := dynamostore.New(db, good, clk)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, false} {
		applied, err := store.Record(ctx, m)
		if err != nil || applied != want {
			t.Fatalf("Record #%d = %v, %v; want %v", i+1, applied, err, want)
		}
	}
	n, err := store.Admitted(ctx, "ev-1", clk.Now(), clk.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("count = %d, %v; want 1", n, err)
	}
}

func TestClaimCarriesSevenDayTTL(t *testing.T) {
	t.Parallel()
	db := client(t)
	ctx := context.Background()
	id := testenv.UniqueID(t)
	tables := dynamostore.Tables{Processed: id + "-processed", Stats: id + "-stats"}
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	store, err := dynamostore.New(db, tables, clock.NewManual(now))
	if err != nil {
		t.Fatal(err)
	}
	m := msg("u-ttl", now)
	if _, err := store.Record(ctx, m); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(tables.Processed),
		Key:       map[string]types.AttributeValue{dynamostore.AttrID: &types.AttributeValueMemberS{Value: dynamostore.ProcessedKey(m)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ttl, ok := out.Item[dynamostore.AttrTTL].(*types.AttributeValueMemberN)
	if want := now.Add(7 * 24 * time.Hour).Unix(); !ok || ttl.Value != strconv.FormatInt(want, 10) {
		t.Fatalf("ttl = %v, want %d", out.Item[dynamostore.AttrTTL], want)
	}
	ttlDesc, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tables.Processed)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttlDesc.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != dynamostore.AttrTTL || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("TTL description = %+v", d)
	}
}

// TestCorruptBucketIsAnError: a bucket whose count is not a number fails the
// read instead of being skipped, which would under-report the admit rate.
func TestCorruptBucketIsAnError(t *testing.T) {
	t.Parallel()
	db := client(t)
	ctx := context.Background()
	id := testenv.UniqueID(t)
	tables := dynamostore.Tables{Processed: id + "-processed", Stats: id + "-stats"}
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 1, 0, 30, 0, time.UTC)
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(tables.Stats),
		Item: map[string]types.AttributeValue{
			dynamostore.AttrEventID:  &types.AttributeValueMemberS{Value: "ev-1"},
			dynamostore.AttrMinute:   &types.AttributeValueMemberN{Value: strconv.FormatInt(dynamostore.MinuteOf(now), 10)},
			dynamostore.AttrAdmitted: &types.AttributeValueMemberS{Value: "many"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := dynamostore.NewStatsReader(db, tables.Stats, clock.NewManual(now))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := store.Admitted(ctx, "ev-1", now.Add(-time.Minute), now.Add(time.Minute)); err == nil {
		t.Fatalf("Admitted over a corrupt bucket = %d, want an error", n)
	}
}
