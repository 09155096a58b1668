// Package dynamostore is the DynamoDB adapter of the admitted consumer: a
// processed-messages table that makes each admission count once, and a stats
// table of per-event, per-minute admission counts that Tier 1's admin status
// reads as the queue's measured admit rate.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/admitted"
	"github.com/vwr-go/vwr/internal/admitted/consumer"
	"github.com/vwr-go/vwr/internal/clock"
)

// Attribute names. The processed table is keyed by AttrID alone; the stats
// table by AttrEventID (hash) and AttrMinute (range, unix seconds of the
// minute's start). Both tables expire items through AttrTTL.
const (
	AttrID       = "id"
	AttrEventID  = "eventId"
	AttrMinute   = "minute"
	AttrAdmitted = "admitted"
	AttrTTL      = "ttl"
)

// Defaults for how long items live.
const (
	DefaultProcessedTTL = 7 * 24 * time.Hour
	DefaultStatsTTL     = 30 * 24 * time.Hour
)

// API is the part of the DynamoDB client the store uses.
type API interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Tables names the two tables and how long their items live.
type Tables struct {
	Processed    string
	Stats        string
	ProcessedTTL time.Duration // 0 → DefaultProcessedTTL
	StatsTTL     time.Duration // 0 → DefaultStatsTTL
}

// WithDefaults fills zero TTLs.
func (t Tables) WithDefaults() Tables {
	if t.ProcessedTTL <= 0 {
		t.ProcessedTTL = DefaultProcessedTTL
	}
	if t.StatsTTL <= 0 {
		t.StatsTTL = DefaultStatsTTL
	}
	return t
}

// Store records admissions in DynamoDB and reads the counts back.
type Store struct {
	db     API
	tables Tables
	clock  clock.Clock
}

var _ consumer.Store = (*Store)(nil)

// New returns a Store. A nil clock means the wall clock.
func New(db API, tables Tables, clk clock.Clock) (*Store, error) {
	if tables.Processed == "" || tables.Stats == "" {
		return nil, errors.New("dynamostore: both table names are required")
	}
	tables = tables.WithDefaults()
	if clk == nil {
		clk = clock.System{}
	}
	return &Store{db: db, tables: tables, clock: clk}, nil
}

// NewStatsReader returns a Store that only reads the stats table (Admitted,
// AdmittedLastMinute): Tier 1's admin status, whose role may only Query it.
// Record on it fails. A nil clock means the wall clock.
func NewStatsReader(db API, stats string, clk clock.Clock) (*Store, error) {
	if stats == "" {
		return nil, errors.New("dynamostore: the stats table name is required")
	}
	if clk == nil {
		clk = clock.System{}
	}
	return &Store{db: db, tables: Tables{Stats: stats}, clock: clk}, nil
}

// ProcessedKey is the processed table's key for m: event plus dedup id.
func ProcessedKey(m admitted.Message) string { return m.EventID + "#" + m.DedupID() }

// MinuteOf returns the stats bucket (unix seconds of the minute's start) t falls in.
func MinuteOf(t time.Time) int64 { return t.Unix() - t.Unix()%60 }

// Record claims m and counts it in one TransactWriteItems: the conditional
// Put of the claim and the ADD on the minute bucket commit together or not at
// all. Two separate calls would leave a window: a crash after the claim but
// before the ADD loses the count forever (the retry sees the claim and skips),
// and the opposite order counts twice. The bucket is the admission's own
// minute (the message timestamp), so a late delivery still lands where it
// happened.
func (s *Store) Record(ctx context.Context, m admitted.Message) (bool, error) {
	if s.tables.Processed == "" {
		return false, errors.New("dynamostore: record on a stats reader")
	}
	now := s.clock.Now()
	claim, err := attributevalue.MarshalMap(claimItem{
		ID:           ProcessedKey(m),
		EventID:      m.EventID,
		AdmittedAt:   m.Timestamp.UTC().Format(time.RFC3339Nano),
		ProcessedAt:  now.UTC().Format(time.RFC3339Nano),
		EntryTokenID: m.EntryTokenID,
		TTL:          now.Add(s.tables.ProcessedTTL).Unix(),
	})
	if err != nil {
		return false, fmt.Errorf("dynamostore: record %s: claim: %w", m.EventID, err)
	}
	bucket, err := attributevalue.MarshalMap(statsKey{EventID: m.EventID, Minute: MinuteOf(m.Timestamp)})
	if err != nil {
		return false, fmt.Errorf("dynamostore: record %s: stats key: %w", m.EventID, err)
	}
	vals, err := attributevalue.MarshalMap(map[string]any{
		":one": 1,
		":ttl": m.Timestamp.Add(s.tables.StatsTTL).Unix(),
	})
	if err != nil {
		return false, fmt.Errorf("dynamostore: record %s: values: %w", m.EventID, err)
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{
				TableName:                aws.String(s.tables.Processed),
				Item:                     claim,
				ConditionExpression:      aws.String("attribute_not_exists(#id)"),
				ExpressionAttributeNames: map[string]string{"#id": AttrID},
			}},
			{Update: &types.Update{
				TableName:                 aws.String(s.tables.Stats),
				Key:                       bucket,
				UpdateExpression:          aws.String("ADD #n :one SET #ttl = if_not_exists(#ttl, :ttl)"),
				ExpressionAttributeNames:  map[string]string{"#n": AttrAdmitted, "#ttl": AttrTTL},
				ExpressionAttributeValues: vals,
			}},
		},
	})
	if err == nil {
		return true, nil
	}
	var canceled *types.TransactionCanceledException
	if errors.As(err, &canceled) && len(canceled.CancellationReasons) > 0 &&
		aws.ToString(canceled.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
		return false, nil
	}
	return false, fmt.Errorf("dynamostore: record %s: %w", m.EventID, err)
}

// Admitted sums the admissions of eventID in the minute buckets that start in
// [from, to).
func (s *Store) Admitted(ctx context.Context, eventID string, from, to time.Time) (int64, error) {
	first, last := bucketRange(from, to)
	if first > last {
		return 0, nil
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":e": eventID, ":from": first, ":to": last})
	if err != nil {
		return 0, fmt.Errorf("dynamostore: query stats %s: %w", eventID, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.Stats),
		KeyConditionExpression:    aws.String("#e = :e AND #m BETWEEN :from AND :to"),
		ExpressionAttributeNames:  map[string]string{"#e": AttrEventID, "#m": AttrMinute},
		ExpressionAttributeValues: vals,
	}
	var total int64
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("dynamostore: query stats %s: %w", eventID, err)
		}
		var buckets []statsItem
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &buckets); err != nil {
			return 0, fmt.Errorf("dynamostore: stats %s: %w", eventID, err)
		}
		for _, b := range buckets {
			total += b.Admitted
		}
		if len(out.LastEvaluatedKey) == 0 {
			return total, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// AdmittedLastMinute is the admissions of eventID in the last complete
// minute, the admit rate Tier 1 status can show.
func (s *Store) AdmittedLastMinute(ctx context.Context, eventID string) (int64, error) {
	end := time.Unix(MinuteOf(s.clock.Now()), 0)
	return s.Admitted(ctx, eventID, end.Add(-time.Minute), end)
}

// bucketRange returns the first and last minute bucket starting in [from, to).
func bucketRange(from, to time.Time) (first, last int64) {
	f := from.Unix()
	if from.Nanosecond() > 0 {
		f++
	}
	if r := f % 60; r != 0 {
		f += 60 - r
	}
	t := to.Unix()
	if to.Nanosecond() == 0 {
		t--
	}
	return f, t - t%60
}

// claimItem is a processed-table item: one admission, claimed once.
type claimItem struct {
	ID           string `dynamodbav:"id"`
	EventID      string `dynamodbav:"eventId"`
	AdmittedAt   string `dynamodbav:"admittedAt"`
	ProcessedAt  string `dynamodbav:"processedAt"`
	EntryTokenID string `dynamodbav:"entryTokenId,omitempty"`
	TTL          int64  `dynamodbav:"ttl"`
}

// statsKey is a stats-table key: an event's minute bucket.
type statsKey struct {
	EventID string `dynamodbav:"eventId"`
	Minute  int64  `dynamodbav:"minute"`
}

// statsItem is the count a stats bucket holds.
type statsItem struct {
	Admitted int64 `dynamodbav:"admitted"`
}
