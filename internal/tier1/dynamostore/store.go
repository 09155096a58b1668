// Package dynamostore is the Tier 1 store on DynamoDB (aws-sdk-go-v2).
//
// Events table (key pk, sk):
//   - pk=<eventId>, sk="event": settings, servingCounter, updatedAt, tick
//     slot and the last minute's advances;
//   - pk=<eventId>, sk="shard#NN": one counter shard (c = positions handed
//     out, n = the shard count it belongs to), bumped with `ADD c :1`;
//   - pk="#registry", sk="active": the set of active event ids ('#' never
//     occurs in an event id).
//
// Positions table (key requestId, TTL attribute ttl):
//   - requestId=<random id>: eventId, position, shard, createdAt, ttl;
//   - requestId="idem#<eventId>#<key>": the first answer to an
//     Idempotency-Key (target = its requestId), same TTL. Keeping these out
//     of the events table keeps them off the event's partition.
//
// An event's settings and all its shards share the partition key, so one
// Query reads them together.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/vwr-go/vwr/internal/dynamotable"
	"github.com/vwr-go/vwr/internal/tier1"
)

// API is the part of the DynamoDB client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Store implements tier1.Store on DynamoDB.
type Store struct {
	db  API
	cfg Config
}

var _ tier1.Store = (*Store)(nil)

// Item key layout.
const (
	skEvent      = "event"
	shardPrefix  = "shard#"
	registryPK   = "#registry"
	registrySK   = "active"
	idemPrefix   = "idem#"
	attrPK       = "pk"
	attrSK       = "sk"
	attrReqID    = "requestId"
	attrTTL      = "ttl"
	maxTransacts = 100
)

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
	return &Store{db: db, cfg: cfg.WithDefaults()}
}

// Config returns the store's table configuration.
func (s *Store) Config() Config { return s.cfg }

func str(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }

func num[T int | int64](v T) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(v), 10)}
}

func getS(item map[string]types.AttributeValue, a string) string {
	if v, ok := item[a].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, a string) int64 {
	if v, ok := item[a].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getBool(item map[string]types.AttributeValue, a string) bool {
	v, ok := item[a].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func shardSK(k int) string { return fmt.Sprintf("%s%02d", shardPrefix, k) }

func eventKey(eventID, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(eventID), attrSK: str(sk)}
}

func idemID(eventID, key string) string { return idemPrefix + eventID + "#" + key }

func msTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

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

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

func canceledByCondition(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}

// Snapshot reads the event item and its shards with one strongly consistent
// Query on the event's partition.
func (s *Store) Snapshot(ctx context.Context, eventID string) (tier1.Snapshot, error) {
	var items []map[string]types.AttributeValue
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(eventID)},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return tier1.Snapshot{}, wrap("snapshot "+eventID, err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	snap := tier1.Snapshot{Event: tier1.Event{ID: eventID}}
	shards := map[int]int64{}
	for _, it := range items {
		sk := getS(it, attrSK)
		switch {
		case sk == skEvent:
			snap.Found = true
			e := &snap.Event
			e.Active = getBool(it, "active")
			e.Paused = getBool(it, "paused")
			e.Shards = int(getN(it, "shards"))
			e.BatchSize = getN(it, "batchSize")
			e.ServingCounter = getN(it, "servingCounter")
			e.TickSlot = getN(it, "tickSlot")
			e.UpdatedAt = msTime(getN(it, "updatedAt"))
			e.Advances = decodeAdvances(it["advances"])
		case strings.HasPrefix(sk, shardPrefix):
			if k, err := strconv.Atoi(sk[len(shardPrefix):]); err == nil {
				shards[k] = getN(it, "c")
			}
		}
	}
	if snap.Found {
		snap.Counters = make([]int64, snap.Event.Shards)
		for k, c := range shards {
			if k >= 0 && k < snap.Event.Shards {
				snap.Counters[k] = c
			}
		}
	}
	return snap, nil
}

// Configure writes the settings, the shard items and the registry in one
// transaction (or, when the shard count is unchanged, just the event item
// and the registry). Each existing shard is conditioned on "no position handed out
// or already this shard count", so a shard-count change after the first
// position cancels the whole transaction (tier1.ErrInvalidConfig).
func (s *Store) Configure(ctx context.Context, eventID string, st tier1.Settings, now time.Time) error {
	// Which shard items exist (a shrinking count must delete the extra ones).
	existing, err := s.shardIndexes(ctx, eventID)
	if err != nil {
		return err
	}
	tbl := aws.String(s.cfg.EventsTable)
	eventUpdate := &types.Update{
		TableName: tbl,
		Key:       eventKey(eventID, skEvent),
		UpdateExpression: aws.String("SET active = :a, paused = :p, shards = :n, batchSize = :b, updatedAt = :now, " +
			"servingCounter = if_not_exists(servingCounter, :zero), tickSlot = if_not_exists(tickSlot, :zero)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":a": &types.AttributeValueMemberBOOL{Value: st.Active}, ":p": &types.AttributeValueMemberBOOL{Value: st.Paused},
			":n": num(st.Shards), ":b": num(st.BatchSize), ":now": num(now.UnixMilli()), ":zero": num(0),
		},
	}
	if sameShards(existing, st.Shards) {
		// Shard count unchanged (pause, resume, new batch size): touch only
		// the event item, so an admin change during a flood does not contend
		// with the enters' ADDs on the shard items. The condition sends a
		// concurrent shard change down the transactional path below.
		fast := *eventUpdate
		fast.ConditionExpression = aws.String("shards = :n")
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: fast.TableName, Key: fast.Key, UpdateExpression: fast.UpdateExpression,
			ConditionExpression: fast.ConditionExpression, ExpressionAttributeValues: fast.ExpressionAttributeValues,
		})
		switch {
		case err == nil:
			return s.register(ctx, eventID, st.Active)
		case !conditionFailed(err):
			return wrap("configure "+eventID, err)
		}
	}
	items := []types.TransactWriteItem{{Update: eventUpdate}}
	for k := 0; k < st.Shards; k++ {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 tbl,
			Key:                       eventKey(eventID, shardSK(k)),
			UpdateExpression:          aws.String("SET n = :n, c = if_not_exists(c, :zero)"),
			ConditionExpression:       aws.String("attribute_not_exists(c) OR c = :zero OR n = :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(st.Shards), ":zero": num(0)},
		}})
	}
	for _, k := range existing {
		if k >= st.Shards {
			items = append(items, types.TransactWriteItem{Delete: &types.Delete{
				TableName:                 tbl,
				Key:                       eventKey(eventID, shardSK(k)),
				ConditionExpression:       aws.String("attribute_not_exists(c) OR c = :zero"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":zero": num(0)},
			}})
		}
	}
	items = append(items, types.TransactWriteItem{Update: s.registryUpdate(eventID, st.Active)})
	if len(items) > maxTransacts {
		return fmt.Errorf("%w: too many shards to change at once", tier1.ErrInvalidConfig)
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if canceledByCondition(err) {
		return fmt.Errorf("%w: shards cannot change after positions were handed out", tier1.ErrInvalidConfig)
	}
	if err != nil {
		return wrap("configure "+eventID, err)
	}
	return nil
}

// sameShards reports whether the existing shard items are exactly 0..n-1.
func sameShards(existing []int, n int) bool {
	if len(existing) != n {
		return false
	}
	for _, k := range existing {
		if k < 0 || k >= n {
			return false
		}
	}
	return true
}

// register adds the event to, or removes it from, the active-events registry.
func (s *Store) register(ctx context.Context, eventID string, active bool) error {
	u := s.registryUpdate(eventID, active)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ExpressionAttributeValues: u.ExpressionAttributeValues,
	})
	if err != nil {
		return wrap("register "+eventID, err)
	}
	return nil
}

// registryUpdate adds eventID to the registry's set when active, else
// removes it.
func (s *Store) registryUpdate(eventID string, active bool) *types.Update {
	op := "DELETE"
	if active {
		op = "ADD"
	}
	return &types.Update{
		TableName:                 aws.String(s.cfg.EventsTable),
		Key:                       eventKey(registryPK, registrySK),
		UpdateExpression:          aws.String(op + " ids :id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberSS{Value: []string{eventID}}},
	}
}

func (s *Store) shardIndexes(ctx context.Context, eventID string) ([]int, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.cfg.EventsTable),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :shard)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(eventID), ":shard": str(shardPrefix),
		},
		ProjectionExpression: aws.String("sk"),
		ConsistentRead:       aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("list shards "+eventID, err)
	}
	var ks []int
	for _, it := range out.Items {
		if k, err := strconv.Atoi(getS(it, attrSK)[len(shardPrefix):]); err == nil {
			ks = append(ks, k)
		}
	}
	return ks, nil
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
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		Key:                       eventKey(p.EventID, shardSK(p.Shard)),
		UpdateExpression:          aws.String("ADD c :one"),
		ConditionExpression:       aws.String("n = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":n": num(p.Shards)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if conditionFailed(err) {
		return tier1.Position{}, false, tier1.ErrConflict
	}
	if err != nil {
		return tier1.Position{}, false, wrap("assign "+p.EventID, err)
	}
	pos := tier1.Position{
		RequestID: p.RequestID, EventID: p.EventID, Shard: p.Shard,
		Position:  tier1.StridedPosition(p.Shard, p.Shards, getN(out.Attributes, "c")),
		CreatedAt: time.UnixMilli(p.Now.UnixMilli()).UTC(),
	}
	expires := p.Now.Add(p.TTL)
	if p.IdempotencyKey == "" {
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(s.cfg.PositionsTable),
			Item:                positionItem(pos, expires),
			ConditionExpression: aws.String("attribute_not_exists(requestId)"),
		})
		if err != nil {
			return tier1.Position{}, false, wrap("record position "+p.EventID, err)
		}
		return pos, false, nil
	}
	idem := positionItem(pos, expires)
	idem[attrReqID] = str(idemID(p.EventID, p.IdempotencyKey))
	idem["target"] = str(p.RequestID)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.cfg.PositionsTable),
		Item:                idem,
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

func positionItem(pos tier1.Position, expires time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrReqID: str(pos.RequestID), "eventId": str(pos.EventID), "position": num(pos.Position),
		"shard": num(pos.Shard), "createdAt": num(pos.CreatedAt.UnixMilli()), attrTTL: num(expires.Unix()),
	}
}

// itemPosition reads a position or idempotency record (positionItem's shape).
func itemPosition(it map[string]types.AttributeValue, requestID, eventID string) tier1.Position {
	return tier1.Position{
		RequestID: requestID, EventID: eventID, Position: getN(it, "position"),
		Shard: int(getN(it, "shard")), CreatedAt: msTime(getN(it, "createdAt")),
	}
}

// putPosition writes a position record unconditionally: for a given
// requestId its content never changes, so a repair after a crash and a
// racing retry write the same item.
func (s *Store) putPosition(ctx context.Context, pos tier1.Position, expires time.Time) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.cfg.PositionsTable),
		Item:      positionItem(pos, expires),
	})
	if err != nil {
		return wrap("record position "+pos.EventID, err)
	}
	return nil
}

func (s *Store) idem(ctx context.Context, eventID, key string) (tier1.Position, bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.cfg.PositionsTable),
		Key:            map[string]types.AttributeValue{attrReqID: str(idemID(eventID, key))},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return tier1.Position{}, false, wrap("read idempotency key "+eventID, err)
	}
	if len(out.Item) == 0 {
		return tier1.Position{}, false, nil
	}
	it := out.Item
	pos := itemPosition(it, getS(it, "target"), eventID)
	// The first attempt may have died between the idempotency record and the
	// position record: rewrite the latter so the returned requestId works.
	if err := s.putPosition(ctx, pos, time.Unix(getN(it, attrTTL), 0)); err != nil {
		return tier1.Position{}, false, err
	}
	return pos, true, nil
}

// Position reads a visitor's record (strongly consistent: a check may
// follow its enter within milliseconds).
func (s *Store) Position(ctx context.Context, eventID, requestID string) (tier1.Position, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.cfg.PositionsTable),
		Key:            map[string]types.AttributeValue{attrReqID: str(requestID)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return tier1.Position{}, wrap("read position "+eventID, err)
	}
	it := out.Item
	if len(it) == 0 || getS(it, "eventId") != eventID || getS(it, "target") != "" {
		return tier1.Position{}, tier1.ErrNotFound
	}
	return itemPosition(it, requestID, eventID), nil
}

// Advance raises the serving counter with a condition on its old value (and
// on the tick slot for scheduled advances).
func (s *Store) Advance(ctx context.Context, a tier1.AdvanceWrite) error {
	expr := "SET servingCounter = :to, updatedAt = :now, advances = :adv"
	cond := "servingCounter = :from"
	vals := map[string]types.AttributeValue{
		":to": num(a.To), ":from": num(a.From), ":now": num(a.Now.UnixMilli()), ":adv": encodeAdvances(a.Advances),
	}
	if a.TickSlot > 0 {
		expr += ", tickSlot = :slot"
		cond += " AND (attribute_not_exists(tickSlot) OR tickSlot < :slot)"
		vals[":slot"] = num(a.TickSlot)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		Key:                       eventKey(a.EventID, skEvent),
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

// ActiveEvents reads the registry item.
func (s *Store) ActiveEvents(ctx context.Context) ([]string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.cfg.EventsTable),
		Key:            eventKey(registryPK, registrySK),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("active events", err)
	}
	var ids []string
	if ss, ok := out.Item["ids"].(*types.AttributeValueMemberSS); ok {
		ids = append(ids, ss.Value...)
	}
	sort.Strings(ids)
	return ids, nil
}

func encodeAdvances(as []tier1.Advance) types.AttributeValue {
	l := make([]types.AttributeValue, len(as))
	for i, a := range as {
		l[i] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"t": num(a.At.UnixMilli()), "n": num(a.Admitted),
		}}
	}
	return &types.AttributeValueMemberL{Value: l}
}

func decodeAdvances(v types.AttributeValue) []tier1.Advance {
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil
	}
	var out []tier1.Advance
	for _, e := range l.Value {
		if m, ok := e.(*types.AttributeValueMemberM); ok {
			out = append(out, tier1.Advance{At: msTime(getN(m.Value, "t")), Admitted: getN(m.Value, "n")})
		}
	}
	return out
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
