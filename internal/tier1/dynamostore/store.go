// Package dynamostore is the Tier 1 store on DynamoDB (aws-sdk-go-v2).
//
// Events table (key pk, sk):
//   - pk=<eventId>, sk="event": settings, servingCounter, updatedAt, tick
//     slot, the last minute's advances and layout=2;
//   - pk=<eventId>#sNN, sk="shard": counter shard NN (c = positions handed
//     out, n = the shard count it belongs to), bumped with `ADD c :1`. Each
//     shard has its own partition key, because DynamoDB's 1,000 writes/s
//     apply per partition;
//   - pk="#registry", sk="active": the set of active event ids;
//   - pk="#events", sk=<eventId>: the events index, one item per event ever
//     configured (updatedAt = its last Configure), read with one Query.
//
// '#' never occurs in an event id, so these keys cannot collide. Events
// written before the shards had their own partition keys (no layout
// attribute, shards at pk=<eventId>, sk="shard#NN") are still read and
// served, and move to the new keys with their next Configure (migrate).
//
// Positions table (key requestId, TTL attribute ttl):
//   - requestId=<random id>: eventId, position, shard, createdAt, ttl;
//   - requestId="idem#<eventId>#<key>": the first answer to an
//     Idempotency-Key (target = its requestId), same TTL. Keeping these out
//     of the events table keeps them off the shards' partitions;
//   - requestId="pow#<eventId>#<challenge>": a spent proof-of-work
//     challenge (k = the Idempotency-Key's hash), until the challenge expires;
//   - requestId="client#<eventId>#<client key>#<window>": the per-client
//     bound's counter n, until the window ends (guard.go).
//
// Items are encoded with feature/dynamodb/attributevalue (items.go). A
// snapshot is one strongly consistent BatchGetItem of the event item and the
// shard keys remembered from the last read (snapshot.go).
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/vwr-go/vwr/internal/dynamotable"
	"github.com/vwr-go/vwr/internal/tier1"
)

// API is the part of the DynamoDB client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Store implements tier1.Store on DynamoDB.
type Store struct {
	db  API
	cfg Config

	mu      sync.Mutex
	layouts map[string]layout // per event, as last read or written
}

var _ tier1.Store = (*Store)(nil)

// New loads the AWS configuration (region, credentials, AWS_ENDPOINT_URL)
// and returns a Store on the configured tables.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var loadOpts []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		loadOpts = append(loadOpts, awsconfig.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		loadOpts = append(loadOpts, awsconfig.WithCredentialsProvider(cfg.Credentials))
	}
	if cfg.Retryer != nil {
		loadOpts = append(loadOpts, awsconfig.WithRetryer(cfg.Retryer))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: load AWS config: %w", err)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		if cfg.HTTPClient != nil {
			o.HTTPClient = cfg.HTTPClient
		}
		o.APIOptions = append(o.APIOptions, cfg.APIOptions...)
	})
	return NewWithClient(client, cfg), nil
}

// NewWithClient returns a Store on an existing client.
func NewWithClient(db API, cfg Config) *Store {
	return &Store{db: db, cfg: cfg.WithDefaults(), layouts: map[string]layout{}}
}

// Client is the DynamoDB client the store runs on (`vwr local` serves the
// event settings from the same tables through it).
func (s *Store) Client() API { return s.db }

// Config returns the store's table configuration.
func (s *Store) Config() Config { return s.cfg }

// throttled reports whether err is DynamoDB still throttling after the
// SDK's retries.
func throttled(err error) bool {
	var pte *types.ProvisionedThroughputExceededException
	var rle *types.RequestLimitExceeded
	if errors.As(err, &pte) || errors.As(err, &rle) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ThrottlingException" {
		return true
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if c := aws.ToString(r.Code); c == "ThrottlingError" || c == "ProvisionedThroughputExceeded" {
				return true
			}
		}
	}
	return false
}

// wrap classifies an SDK error: throttling becomes tier1.ErrThrottled.
func wrap(op string, err error) error {
	if throttled(err) {
		return fmt.Errorf("dynamostore: %s: %w (%v)", op, tier1.ErrThrottled, err)
	}
	return fmt.Errorf("dynamostore: %s: %w", op, err)
}

// readItem reads one item of table strongly consistently into out; found
// is false (and out untouched) when there is none. key is an attribute map
// or a struct that marshals to one; what names the item in errors.
func (s *Store) readItem(ctx context.Context, table string, key any, what string, out any) (found bool, err error) {
	k, ok := key.(map[string]types.AttributeValue)
	if !ok {
		if k, err = attributevalue.MarshalMap(key); err != nil {
			return false, fmt.Errorf("dynamostore: %s: %w", what, err)
		}
	}
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, wrap("read "+what, err)
	}
	if len(res.Item) == 0 {
		return false, nil
	}
	if err := attributevalue.UnmarshalMap(res.Item, out); err != nil {
		return false, fmt.Errorf("dynamostore: decode %s: %w", what, err)
	}
	return true, nil
}

func conditionFailed(err error) bool {
	return conditionFailure(err) != nil
}

// conditionFailure is err's failed condition, with the item it failed on
// when the request asked for it; nil for any other error.
func conditionFailure(err error) *types.ConditionalCheckFailedException {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf
	}
	return nil
}

// failedConditions returns the indexes of a cancelled transaction's items
// whose condition failed (none for any other error).
func failedConditions(err error) []int {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	var idx []int
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			idx = append(idx, i)
		}
	}
	return idx
}

// Assign hands out a position.
//
// Exactly-once per Idempotency-Key: the counter ADD is not idempotent, so
// the idempotency record is the single source of truth for a key. After the
// ADD, the record is put with attribute_not_exists; only its winner's
// position counts, and the position record is written after it. A crash or
// throttle between ADD and that put leaves only a hole (a counter value
// nobody holds); a concurrent duplicate loses the put, reads the winner's
// record and returns it (again a hole); a crash between the two puts is
// repaired by the next retry, which rewrites the (identical) position record
// from the idempotency record. Holes cost nothing but being counted as one
// visitor by the advancer. The key's record is read first, so an ordinary
// retry does not even burn a counter value. (TransactWriteItems would also
// do, at twice the write cost per item.)
func (s *Store) Assign(ctx context.Context, p tier1.NewPosition) (tier1.Position, bool, error) {
	if p.IdempotencyKey != "" {
		prev, ok, err := s.idem(ctx, p.EventID, p.IdempotencyKey)
		if err != nil || ok {
			return prev, ok, err
		}
	}
	c, err := s.bump(ctx, p)
	if err != nil {
		return tier1.Position{}, false, err
	}
	pos := tier1.Position{
		RequestID: p.RequestID, EventID: p.EventID, Shard: p.Shard,
		Position:  tier1.StridedPosition(p.Shard, p.Shards, c),
		CreatedAt: time.UnixMilli(p.Now.UnixMilli()).UTC(),
	}
	expires := p.Now.Add(p.TTL)
	if p.IdempotencyKey == "" {
		item, err := attributevalue.MarshalMap(newRecord(pos, expires))
		if err != nil {
			return tier1.Position{}, false, fmt.Errorf("dynamostore: record position %s: %w", p.EventID, err)
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(s.cfg.PositionsTable),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(requestId)"),
		})
		if err != nil {
			return tier1.Position{}, false, wrap("record position "+p.EventID, err)
		}
		return pos, false, nil
	}
	rec := newRecord(pos, expires)
	rec.RequestID, rec.Target = idemID(p.EventID, p.IdempotencyKey), p.RequestID
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return tier1.Position{}, false, fmt.Errorf("dynamostore: record idempotency key %s: %w", p.EventID, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.cfg.PositionsTable),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(requestId)"),
	})
	if conditionFailed(err) {
		prev, ok, err := s.idem(ctx, p.EventID, p.IdempotencyKey)
		if err == nil && !ok {
			err = fmt.Errorf("dynamostore: idempotency record of %s vanished", p.EventID)
		}
		return prev, ok, err
	}
	if err != nil {
		return tier1.Position{}, false, wrap("record idempotency key "+p.EventID, err)
	}
	if err := s.putPosition(ctx, pos, expires); err != nil {
		return tier1.Position{}, false, err
	}
	return pos, false, nil
}

// bump adds one to the chosen shard's counter, on condition that the shard
// belongs to the count the caller believes (else tier1.ErrConflict), and
// returns the new count. On an event the store last saw in the legacy
// layout it tries the shard's legacy key first, then its own key, where a
// migration may have just moved it; both are conditioned, and only one of
// the two items exists at a time.
func (s *Store) bump(ctx context.Context, p tier1.NewPosition) (int64, error) {
	keys := []itemKey{shardKey(p.EventID, p.Shard)}
	if l, ok := s.remembered(p.EventID); ok && l.legacy {
		keys = []itemKey{legacyShardKey(p.EventID, p.Shard), shardKey(p.EventID, p.Shard)}
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":one": 1, ":n": p.Shards})
	if err != nil {
		return 0, fmt.Errorf("dynamostore: assign %s: %w", p.EventID, err)
	}
	for _, k := range keys {
		key, err := attributevalue.MarshalMap(k)
		if err != nil {
			return 0, fmt.Errorf("dynamostore: assign %s: %w", p.EventID, err)
		}
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.cfg.EventsTable),
			Key:                       key,
			UpdateExpression:          aws.String("ADD c :one"),
			ConditionExpression:       aws.String("n = :n"),
			ExpressionAttributeValues: vals,
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		if conditionFailed(err) {
			continue
		}
		if err != nil {
			return 0, wrap("assign "+p.EventID, err)
		}
		var sh shardItem
		if err := attributevalue.UnmarshalMap(out.Attributes, &sh); err != nil {
			return 0, fmt.Errorf("dynamostore: assign %s: decode counter: %w", p.EventID, err)
		}
		if sh.C < 1 {
			return 0, fmt.Errorf("dynamostore: assign %s: counter %d after ADD", p.EventID, sh.C)
		}
		return sh.C, nil
	}
	return 0, tier1.ErrConflict
}

// putPosition writes a position record unconditionally: for a given
// requestId its content never changes, so a repair after a crash and a
// racing retry write the same item.
func (s *Store) putPosition(ctx context.Context, pos tier1.Position, expires time.Time) error {
	item, err := attributevalue.MarshalMap(newRecord(pos, expires))
	if err != nil {
		return fmt.Errorf("dynamostore: record position %s: %w", pos.EventID, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.cfg.PositionsTable),
		Item:      item,
	})
	if err != nil {
		return wrap("record position "+pos.EventID, err)
	}
	return nil
}

// record reads a positions-table item strongly consistently; found is false
// when there is none.
func (s *Store) record(ctx context.Context, requestID string) (rec positionRecord, found bool, err error) {
	found, err = s.readItem(ctx, s.cfg.PositionsTable, recordKey{RequestID: requestID}, "position "+requestID, &rec)
	return rec, found, err
}

func (s *Store) idem(ctx context.Context, eventID, key string) (tier1.Position, bool, error) {
	rec, ok, err := s.record(ctx, idemID(eventID, key))
	if err != nil {
		return tier1.Position{}, false, wrap("read idempotency key "+eventID, err)
	}
	if !ok {
		return tier1.Position{}, false, nil
	}
	pos := rec.position(rec.Target)
	// The first attempt may have died between the idempotency record and the
	// position record: rewrite the latter so the returned requestId works.
	if err := s.putPosition(ctx, pos, time.Unix(rec.TTL, 0)); err != nil {
		return tier1.Position{}, false, err
	}
	return pos, true, nil
}

// Position reads a visitor's record (strongly consistent: a check may
// follow its enter within milliseconds).
func (s *Store) Position(ctx context.Context, eventID, requestID string) (tier1.Position, error) {
	rec, ok, err := s.record(ctx, requestID)
	if err != nil {
		return tier1.Position{}, wrap("read position "+eventID, err)
	}
	if !ok || rec.EventID != eventID || rec.Target != "" {
		return tier1.Position{}, tier1.ErrNotFound
	}
	return rec.position(requestID), nil
}

// Advance raises the serving counter with a condition on its old value (and
// on the tick slot for scheduled advances).
func (s *Store) Advance(ctx context.Context, a tier1.AdvanceWrite) error {
	expr := "SET servingCounter = :to, updatedAt = :now, advances = :adv"
	cond := "servingCounter = :from"
	v := map[string]any{":to": a.To, ":from": a.From, ":now": a.Now.UnixMilli(), ":adv": advanceItems(a.Advances)}
	if a.TickSlot > 0 {
		expr += ", tickSlot = :slot"
		cond += " AND (attribute_not_exists(tickSlot) OR tickSlot < :slot)"
		v[":slot"] = a.TickSlot
	}
	vals, err := attributevalue.MarshalMap(v)
	if err != nil {
		return fmt.Errorf("dynamostore: advance %s: %w", a.EventID, err)
	}
	key, err := attributevalue.MarshalMap(eventKey(a.EventID))
	if err != nil {
		return fmt.Errorf("dynamostore: advance %s: %w", a.EventID, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		Key:                       key,
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
	})
	if conditionFailed(err) {
		return tier1.ErrConflict
	}
	if err != nil {
		return wrap("advance "+a.EventID, err)
	}
	return nil
}

// maxIndexPages bounds the pages Events reads (a page is up to 1 MB, some
// 20,000 events).
const maxIndexPages = 10

// Events queries the events index and returns the most recently configured
// first.
func (s *Store) Events(ctx context.Context, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":pk": catalogPK})
	if err != nil {
		return nil, fmt.Errorf("dynamostore: events: %w", err)
	}
	var all []catalogItem
	var start map[string]types.AttributeValue
	for range maxIndexPages {
		page, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.cfg.EventsTable),
			KeyConditionExpression:    aws.String("pk = :pk"),
			ProjectionExpression:      aws.String("sk, updatedAt"),
			ExpressionAttributeValues: vals,
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, wrap("events", err)
		}
		var items []catalogItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("dynamostore: decode events: %w", err)
		}
		all = append(all, items...)
		if start = page.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].UpdatedAt != all[j].UpdatedAt {
			return all[i].UpdatedAt > all[j].UpdatedAt
		}
		return all[i].SK > all[j].SK // as a ZSET's ZREVRANGE orders ties
	})
	ids := make([]string, 0, min(limit, len(all)))
	for _, it := range all[:min(limit, len(all))] {
		ids = append(ids, it.SK)
	}
	return ids, nil
}

// ActiveEvents reads the registry item.
func (s *Store) ActiveEvents(ctx context.Context) ([]string, error) {
	var reg registryItem
	if _, err := s.readItem(ctx, s.cfg.EventsTable, registryKey(), "active events", &reg); err != nil {
		return nil, err
	}
	sort.Strings(reg.IDs)
	return reg.IDs, nil
}

// Tables are the store's two tables as template.yaml declares them.
func (s *Store) Tables() []dynamotable.Spec {
	return []dynamotable.Spec{
		{
			Name:  s.cfg.EventsTable,
			Hash:  dynamotable.Key{Name: attrPK, Type: types.ScalarAttributeTypeS},
			Range: dynamotable.Key{Name: attrSK, Type: types.ScalarAttributeTypeS},
		},
		{
			Name:         s.cfg.PositionsTable,
			Hash:         dynamotable.Key{Name: attrReqID, Type: types.ScalarAttributeTypeS},
			TTLAttribute: attrTTL,
		},
	}
}

// CreateTables creates both tables on demand with TTL on positions; an
// existing table keeps its schema. Used by tests and by `vwr local` with
// VWR_TIER1_STORE=dynamodb.
func (s *Store) CreateTables(ctx context.Context) error {
	if err := dynamotable.Create(ctx, s.db, s.Tables()...); err != nil {
		return wrap("create tables", err)
	}
	return nil
}
