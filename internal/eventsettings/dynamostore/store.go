// Package dynamostore keeps event settings and the Tier 2 ledger in Tier
// 1's two DynamoDB tables (eventsettings.Store and eventsettings.Ledger),
// items of their own beside Tier 1's, so a deployment has one events
// table and one positions table.
package dynamostore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/dynamotable"
	"github.com/vwr-go/vwr/internal/eventsettings"
)

// The settings live in the events table:
//   - pk="#queue-settings", sk=<eventId>: threshold, open, version, epoch.
//     Every event's settings share one partition, so a refresh reads them
//     with a Query, never a Scan of Tier 1's items;
//   - pk="#registry", sk="queue-version": v, bumped by every write, so an
//     instance re-reads all settings only when something changed; gen, a
//     random id set with the first write (eventsettings.Version); layout,
//     2 once the settings of an older store (pk=<eventId>, sk="queue",
//     found with a Scan) have been copied into the partition.
//
// The ledger lives in the positions table, which no settings refresh scans:
//   - requestId="t2ledger#<eventId>": n, the number of chunks appended;
//   - requestId="t2ledger#<eventId>#<i>", i = 1…n: entries, a map user id
//     -> served value (eventsettings.LedgerEntry.Value), one append's worth
//     (at most ledgerChunk users).
//
// Both kinds of ledger item carry ttl = the last append + LedgerRetention.

var _ eventsettings.StoreLedger = (*Store)(nil)

// Default table names: Tier 1's (internal/tier1/dynamostore uses these).
const (
	DefaultEventsTable    = "vwr-tier1-events"
	DefaultPositionsTable = "vwr-tier1-positions"
)

// Config names the two tables (VWR_TIER1_EVENTS_TABLE and
// VWR_TIER1_POSITIONS_TABLE); empty names take the defaults.
type Config struct {
	EventsTable    string
	PositionsTable string
}

// WithDefaults fills empty table names.
func (c Config) WithDefaults() Config {
	if c.EventsTable == "" {
		c.EventsTable = DefaultEventsTable
	}
	if c.PositionsTable == "" {
		c.PositionsTable = DefaultPositionsTable
	}
	return c
}

// API is what the store needs from the DynamoDB client.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	// Scan serves only the one-time migration of an older store.
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Store is the DynamoDB adapter. It is safe for concurrent use.
type Store struct {
	db  API
	cfg Config
}

// New returns a Store over db on cfg's tables.
func New(db API, cfg Config) *Store {
	cfg = cfg.WithDefaults()
	return &Store{db: db, cfg: cfg}
}

// Open loads the AWS configuration (region, credentials, AWS_ENDPOINT_URL
// and AWS_ENDPOINT_URL_DYNAMODB) and returns a Store on cfg's tables.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if cfg.EventsTable == cfg.PositionsTable {
		return nil, errors.New("VWR_TIER1_EVENTS_TABLE and VWR_TIER1_POSITIONS_TABLE must differ")
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: load AWS config: %w", err)
	}
	return New(dynamodb.NewFromConfig(awsCfg), cfg), nil
}

// Tables are the two tables, with the key attributes this store uses, as
// template.yaml declares them (Tier 1's store declares the same).
func (c Config) Tables() []dynamotable.Spec {
	c = c.WithDefaults()
	return []dynamotable.Spec{
		{
			Name:  c.EventsTable,
			Hash:  dynamotable.Key{Name: "pk", Type: types.ScalarAttributeTypeS},
			Range: dynamotable.Key{Name: attrSK, Type: types.ScalarAttributeTypeS},
		},
		{Name: c.PositionsTable, Hash: dynamotable.Key{Name: "requestId", Type: types.ScalarAttributeTypeS}, TTLAttribute: attrTTL},
	}
}

const (
	settingsPK     = "#queue-settings"
	layoutQuery    = 2 // versionItem.Layout once every setting is in settingsPK
	attrSK         = "sk"
	attrTTL        = "ttl"
	registryPK     = "#registry"
	skQueue        = "queue"
	queueVersionSK = "queue-version"
	ledgerPrefix   = "t2ledger#"
)

type itemKey struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
}

type recordKey struct {
	RequestID string `dynamodbav:"requestId"`
}

func queueKey(eventID string) itemKey { return itemKey{PK: settingsPK, SK: eventID} }
func queueVersionKey() itemKey        { return itemKey{PK: registryPK, SK: queueVersionSK} }

// ledgerHead and ledgerChunkKey are positions-table keys: '#' never occurs
// in a random requestId (base64url), so they cannot collide with one.
func ledgerHead(eventID string) recordKey { return recordKey{RequestID: ledgerPrefix + eventID} }
func ledgerChunkKey(eventID string, i int64) recordKey {
	return recordKey{RequestID: ledgerPrefix + eventID + "#" + strconv.FormatInt(i, 10)}
}

func wrap(op string, err error) error { return fmt.Errorf("dynamostore: %s: %w", op, err) }

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// readItem reads one item of table strongly consistently into out; found
// is false (and out untouched) when there is none.
func (s *Store) readItem(ctx context.Context, table string, key any, what string, out any) (found bool, err error) {
	k, err := attributevalue.MarshalMap(key)
	if err != nil {
		return false, fmt.Errorf("dynamostore: %s: %w", what, err)
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

// queueItem is an event's Tier 2 settings item: pk is settingsPK and sk
// the event id (in a store of the older layout, pk the event id and sk
// "queue").
type queueItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Threshold int64  `dynamodbav:"threshold"`
	Open      bool   `dynamodbav:"open"`
	Version   int64  `dynamodbav:"version"`
	Epoch     string `dynamodbav:"epoch,omitempty"`
}

func (q queueItem) settings() eventsettings.Settings {
	return eventsettings.Settings{Threshold: q.Threshold, Open: q.Open, Version: q.Version, Epoch: q.Epoch}
}

// versionItem is the store-wide version item.
type versionItem struct {
	V      int64  `dynamodbav:"v"`
	Gen    string `dynamodbav:"gen"`
	Layout int64  `dynamodbav:"layout"`
}

// QueueSettingsVersion reads the version item (strongly consistent).
func (s *Store) QueueSettingsVersion(ctx context.Context) (eventsettings.Version, error) {
	var v versionItem
	if _, err := s.readItem(ctx, s.cfg.EventsTable, queueVersionKey(), "queue settings version", &v); err != nil {
		return eventsettings.Version{}, err
	}
	return eventsettings.Version{Generation: v.Gen, N: v.V}, nil
}

// QueueSettings reads the version, then every event's settings with a
// Query of their partition (strongly consistent, every page). A store of
// the older layout is migrated first, once (migrate).
func (s *Store) QueueSettings(ctx context.Context) (map[string]eventsettings.Settings, eventsettings.Version, error) {
	var vi versionItem
	if _, err := s.readItem(ctx, s.cfg.EventsTable, queueVersionKey(), "queue settings version", &vi); err != nil {
		return nil, eventsettings.Version{}, err
	}
	v := eventsettings.Version{Generation: vi.Gen, N: vi.V}
	if vi.Layout < layoutQuery {
		if err := s.migrate(ctx); err != nil {
			return nil, eventsettings.Version{}, err
		}
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":p": settingsPK})
	if err != nil {
		return nil, eventsettings.Version{}, fmt.Errorf("dynamostore: queue settings: %w", err)
	}
	out := map[string]eventsettings.Settings{}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :p"),
		ExpressionAttributeValues: vals,
	}
	for {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, eventsettings.Version{}, wrap("queue settings", err)
		}
		var items []queueItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, eventsettings.Version{}, fmt.Errorf("dynamostore: queue settings: %w", err)
		}
		for _, it := range items {
			out[it.SK] = it.settings()
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, v, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// migrate copies the settings of the older layout (pk=<eventId>,
// sk="queue", found with a Scan: the only one this store ever makes) into
// the settings partition, keeping any item written there since, and then
// notes the layout in the version item, so it runs once per store. The
// copies keep their versions: nothing changed, so no refresh reads again.
// Instances may run it at once; each copy is put only if absent.
func (s *Store) migrate(ctx context.Context) error {
	vals, err := attributevalue.MarshalMap(map[string]any{":q": skQueue})
	if err != nil {
		return fmt.Errorf("dynamostore: migrate queue settings: %w", err)
	}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("sk = :q"),
		ExpressionAttributeValues: vals,
	}
	for {
		page, err := s.db.Scan(ctx, in)
		if err != nil {
			return wrap("migrate queue settings", err)
		}
		var items []queueItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return fmt.Errorf("dynamostore: migrate queue settings: %w", err)
		}
		for _, it := range items {
			it.PK, it.SK = settingsPK, it.PK
			item, err := attributevalue.MarshalMap(it)
			if err != nil {
				return fmt.Errorf("dynamostore: migrate queue settings: %w", err)
			}
			_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(s.cfg.EventsTable), Item: item,
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			})
			if err != nil && !conditionFailed(err) {
				return wrap("migrate queue settings "+it.SK, err)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	vKey, err := attributevalue.MarshalMap(queueVersionKey())
	if err != nil {
		return fmt.Errorf("dynamostore: migrate queue settings: %w", err)
	}
	lv, err := attributevalue.MarshalMap(map[string]any{":l": layoutQuery})
	if err != nil {
		return fmt.Errorf("dynamostore: migrate queue settings: %w", err)
	}
	if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.cfg.EventsTable), Key: vKey,
		UpdateExpression: aws.String("SET layout = :l"), ExpressionAttributeValues: lv,
	}); err != nil {
		return wrap("migrate queue settings", err)
	}
	return nil
}

// bumpQueueVersion adds one to the store-wide version, setting the
// generation if the store has none, and returns the new version.
func (s *Store) bumpQueueVersion(ctx context.Context, what string) (int64, error) {
	vKey, err := attributevalue.MarshalMap(queueVersionKey())
	if err != nil {
		return 0, fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":one": 1, ":g": rand.Text()})
	if err != nil {
		return 0, fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	bumped, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.cfg.EventsTable), Key: vKey,
		UpdateExpression:          aws.String("ADD v :one SET gen = if_not_exists(gen, :g)"),
		ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, wrap(what, err)
	}
	var nv versionItem
	if err := attributevalue.UnmarshalMap(bumped.Attributes, &nv); err != nil {
		return 0, fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	return nv.V, nil
}

// PutQueueSettings bumps the version item, then writes the event's
// threshold and open with that version (keeping its epoch), unless a write
// with a newer version got there first (then that one is returned). A
// failure between the two writes only leaves a version with no change
// behind: the next refresh reads once more.
func (s *Store) PutQueueSettings(ctx context.Context, eventID string, es eventsettings.Settings) (eventsettings.Settings, error) {
	what := "put queue settings " + eventID
	v, err := s.bumpQueueVersion(ctx, what)
	if err != nil {
		return eventsettings.Settings{}, err
	}
	key, err := attributevalue.MarshalMap(queueKey(eventID))
	if err != nil {
		return eventsettings.Settings{}, fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":t": es.Threshold, ":o": es.Open, ":v": v})
	if err != nil {
		return eventsettings.Settings{}, fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.cfg.EventsTable), Key: key,
		UpdateExpression:          aws.String("SET threshold = :t, #o = :o, version = :v"),
		ConditionExpression:       aws.String("attribute_not_exists(version) OR version < :v"),
		ExpressionAttributeNames:  map[string]string{"#o": "open"},
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		got, _, err := s.queueSettingsOf(ctx, eventID)
		return got, err
	}
	if err != nil {
		return eventsettings.Settings{}, wrap(what, err)
	}
	var it queueItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return eventsettings.Settings{}, fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	return it.settings(), nil
}

// PutQueueEpoch bumps the version item, then writes the epoch of a stored
// event with that version. Should a newer write win the race, the epoch is
// still written, under that write's version.
func (s *Store) PutQueueEpoch(ctx context.Context, eventID, epoch string) (eventsettings.Settings, bool, error) {
	what := "put queue epoch " + eventID
	v, err := s.bumpQueueVersion(ctx, what)
	if err != nil {
		return eventsettings.Settings{}, false, err
	}
	key, err := attributevalue.MarshalMap(queueKey(eventID))
	if err != nil {
		return eventsettings.Settings{}, false, fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	for _, newer := range []bool{false, true} {
		in := &dynamodb.UpdateItemInput{
			TableName: aws.String(s.cfg.EventsTable), Key: key,
			UpdateExpression:    aws.String("SET epoch = :e, version = :v"),
			ConditionExpression: aws.String("attribute_exists(pk) AND version < :v"),
			ReturnValues:        types.ReturnValueAllNew,
		}
		vals := map[string]any{":e": epoch, ":v": v}
		if newer {
			in.UpdateExpression, in.ConditionExpression = aws.String("SET epoch = :e"), aws.String("attribute_exists(pk)")
			delete(vals, ":v")
		}
		if in.ExpressionAttributeValues, err = attributevalue.MarshalMap(vals); err != nil {
			return eventsettings.Settings{}, false, fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		out, err := s.db.UpdateItem(ctx, in)
		if conditionFailed(err) {
			if _, found, err := s.queueSettingsOf(ctx, eventID); err != nil || !found {
				return eventsettings.Settings{}, false, err
			}
			continue
		}
		if err != nil {
			return eventsettings.Settings{}, false, wrap(what, err)
		}
		var it queueItem
		if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
			return eventsettings.Settings{}, false, fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		return it.settings(), true, nil
	}
	return eventsettings.Settings{}, false, fmt.Errorf("dynamostore: %s: the item changed twice meanwhile", what)
}

// RestoreQueueSettings writes each event absent from the table under a
// new version, with a condition that it still is absent.
func (s *Store) RestoreQueueSettings(ctx context.Context, all map[string]eventsettings.Settings) (int, error) {
	n := 0
	for ev, es := range all {
		what := "restore queue settings " + ev
		v, err := s.bumpQueueVersion(ctx, what)
		if err != nil {
			return n, err
		}
		item, err := attributevalue.MarshalMap(queueItem{PK: settingsPK, SK: ev, Threshold: es.Threshold, Open: es.Open, Version: v, Epoch: es.Epoch})
		if err != nil {
			return n, fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.cfg.EventsTable), Item: item,
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		if conditionFailed(err) {
			continue
		}
		if err != nil {
			return n, wrap(what, err)
		}
		n++
	}
	return n, nil
}

// queueSettingsOf reads one event's settings item (strongly consistent).
func (s *Store) queueSettingsOf(ctx context.Context, eventID string) (eventsettings.Settings, bool, error) {
	var it queueItem
	found, err := s.readItem(ctx, s.cfg.EventsTable, queueKey(eventID), "queue settings "+eventID, &it)
	if err != nil {
		return eventsettings.Settings{}, false, err
	}
	return it.settings(), found, nil
}

// ledgerChunk bounds the users one ledger item holds (about 40 KB).
const ledgerChunk = 1000

// ledgerReadBatch is how many chunks one QueueLedger page reads (one
// BatchGetItem, well under its 16 MB limit).
const ledgerReadBatch = 25

type ledgerHeadItem struct {
	N int64 `dynamodbav:"n"`
}

type ledgerChunkItem struct {
	Entries map[string]string `dynamodbav:"entries"`
}

// AppendQueueLedger takes the next chunk number from the ledger's head
// item (ADD n 1) and writes the entries under it, ledgerChunk users per
// chunk. A failure between the two leaves a gap the reader skips; the
// caller appends the entries again.
func (s *Store) AppendQueueLedger(ctx context.Context, eventID string, entries []eventsettings.LedgerEntry, now time.Time) error {
	what := "append queue ledger " + eventID
	ttl := now.Add(eventsettings.LedgerRetention).Unix()
	for len(entries) > 0 {
		part := entries[:min(len(entries), ledgerChunk)]
		entries = entries[len(part):]
		head, err := attributevalue.MarshalMap(ledgerHead(eventID))
		if err != nil {
			return fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		vals, err := attributevalue.MarshalMap(map[string]any{":one": 1, ":ttl": ttl})
		if err != nil {
			return fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.cfg.PositionsTable), Key: head,
			UpdateExpression:          aws.String("ADD n :one SET #ttl = :ttl"),
			ExpressionAttributeNames:  map[string]string{"#ttl": attrTTL},
			ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueUpdatedNew,
		})
		if err != nil {
			return wrap(what, err)
		}
		var h ledgerHeadItem
		if err := attributevalue.UnmarshalMap(out.Attributes, &h); err != nil {
			return fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		m := make(map[string]string, len(part))
		for _, e := range part {
			m[e.UserID] = e.Value // within one append, the later entry wins
		}
		item, err := attributevalue.MarshalMap(struct {
			recordKey
			ledgerChunkItem
			TTL int64 `dynamodbav:"ttl"`
		}{ledgerChunkKey(eventID, h.N), ledgerChunkItem{Entries: m}, ttl})
		if err != nil {
			return fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.cfg.PositionsTable), Item: item}); err != nil {
			return wrap(what, err)
		}
	}
	return nil
}

// QueueLedger reads ledgerReadBatch chunks from the cursor (the next chunk
// number, "" for 1) in one BatchGetItem, in chunk order; chunks missing (a
// failed append) are skipped.
func (s *Store) QueueLedger(ctx context.Context, eventID, cursor string) ([]eventsettings.LedgerEntry, string, error) {
	what := "queue ledger " + eventID
	from := int64(1)
	if cursor != "" {
		var err error
		if from, err = strconv.ParseInt(cursor, 10, 64); err != nil || from < 1 {
			return nil, "", fmt.Errorf("dynamostore: %s: bad cursor %q", what, cursor)
		}
	}
	var h ledgerHeadItem
	if _, err := s.readItem(ctx, s.cfg.PositionsTable, ledgerHead(eventID), what, &h); err != nil {
		return nil, "", err
	}
	to := min(h.N, from+ledgerReadBatch-1)
	if from > to {
		return nil, "", nil
	}
	keys := make([]map[string]types.AttributeValue, 0, to-from+1)
	for i := from; i <= to; i++ {
		k, err := attributevalue.MarshalMap(ledgerChunkKey(eventID, i))
		if err != nil {
			return nil, "", fmt.Errorf("dynamostore: %s: %w", what, err)
		}
		keys = append(keys, k)
	}
	chunks := map[int64]map[string]string{}
	req := map[string]types.KeysAndAttributes{s.cfg.PositionsTable: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for len(req) > 0 {
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, "", wrap(what, err)
		}
		for _, raw := range out.Responses[s.cfg.PositionsTable] {
			var it struct {
				recordKey
				ledgerChunkItem
			}
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, "", fmt.Errorf("dynamostore: %s: %w", what, err)
			}
			i, err := strconv.ParseInt(it.RequestID[len(ledgerHead(eventID).RequestID)+1:], 10, 64)
			if err != nil {
				return nil, "", fmt.Errorf("dynamostore: %s: chunk key %q", what, it.RequestID)
			}
			chunks[i] = it.Entries
		}
		req = out.UnprocessedKeys
	}
	order := make([]int64, 0, len(chunks))
	for i := range chunks {
		order = append(order, i)
	}
	sort.Slice(order, func(a, b int) bool { return order[a] < order[b] })
	var entries []eventsettings.LedgerEntry
	for _, i := range order {
		for uid, v := range chunks[i] {
			entries = append(entries, eventsettings.LedgerEntry{UserID: uid, Value: v})
		}
	}
	next := ""
	if to < h.N {
		next = strconv.FormatInt(to+1, 10)
	}
	return entries, next, nil
}
