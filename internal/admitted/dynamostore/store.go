// Package dynamostore is the DynamoDB adapter of the admitted consumer: a
// processed-messages table that makes each admission count once, and a stats
// table of per-event, per-minute admission counts that Tier 1's admin status
// reads as the queue's measured admit rate.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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
	claimTTL := now.Add(s.tables.ProcessedTTL).Unix()
	statsTTL := m.Timestamp.Add(s.tables.StatsTTL).Unix()
	claim := map[string]types.AttributeValue{
		AttrID:        str(ProcessedKey(m)),
		AttrEventID:   str(m.EventID),
		"admittedAt":  str(m.Timestamp.UTC().Format(time.RFC3339Nano)),
		"processedAt": str(now.UTC().Format(time.RFC3339Nano)),
		AttrTTL:       num(claimTTL),
	}
	if m.EntryTokenID != "" {
		claim["entryTokenId"] = str(m.EntryTokenID)
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{
				TableName:                aws.String(s.tables.Processed),
				Item:                     claim,
				ConditionExpression:      aws.String("attribute_not_exists(#id)"),
				ExpressionAttributeNames: map[string]string{"#id": AttrID},
			}},
			{Update: &types.Update{
				TableName: aws.String(s.tables.Stats),
				Key: map[string]types.AttributeValue{
					AttrEventID: str(m.EventID),
					AttrMinute:  num(MinuteOf(m.Timestamp)),
				},
				UpdateExpression:         aws.String("ADD #n :one SET #ttl = if_not_exists(#ttl, :ttl)"),
				ExpressionAttributeNames: map[string]string{"#n": AttrAdmitted, "#ttl": AttrTTL},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":one": num(1),
					":ttl": num(statsTTL),
				},
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
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Stats),
		KeyConditionExpression: aws.String("#e = :e AND #m BETWEEN :from AND :to"),
		ExpressionAttributeNames: map[string]string{
			"#e": AttrEventID, "#m": AttrMinute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e":    str(eventID),
			":from": num(first),
			":to":   num(last),
		},
	}
	var total int64
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return 0, fmt.Errorf("dynamostore: query stats %s: %w", eventID, err)
		}
		for _, item := range out.Items {
			n, ok := item[AttrAdmitted].(*types.AttributeValueMemberN)
			if !ok {
				continue
			}
			v, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("dynamostore: stats %s: bad count %q", eventID, n.Value)
			}
			total += v
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

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
