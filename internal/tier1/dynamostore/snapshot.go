package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/tier1"
)

// layout is what the store remembers of an event between reads: which shard
// keys to fetch together with the event item.
type layout struct {
	shards int
	legacy bool // shards (partly) still under the event's partition key
}

// shardKeys are the keys that may hold the event's shard counters. A legacy
// event may be half migrated, so both keys of every shard are read.
func (l layout) shardKeys(eventID string) []itemKey {
	var ks []itemKey
	for k := range l.shards {
		if l.legacy {
			ks = append(ks, legacyShardKey(eventID, k))
		}
		ks = append(ks, shardKey(eventID, k))
	}
	return ks
}

// maxRemembered bounds the layout memory against floods of made-up ids.
const maxRemembered = 10_000

func (s *Store) remembered(eventID string) (layout, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.layouts[eventID]
	return l, ok
}

func (s *Store) remember(eventID string, l layout) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.layouts[eventID]; !ok && len(s.layouts) >= maxRemembered {
		s.layouts = map[string]layout{}
	}
	s.layouts[eventID] = l
}

func (s *Store) forget(eventID string) {
	s.mu.Lock()
	delete(s.layouts, eventID)
	s.mu.Unlock()
}

// state is an event as read: its snapshot, its layout and, for a legacy
// event, which shards still wait under the event's partition key.
type state struct {
	snap    tier1.Snapshot
	layout  layout
	pending []int // legacy shards without an item under their own partition key yet
}

// Snapshot reads the event item and its shard items strongly consistently,
// in one BatchGetItem when the store remembers the event's shard count (see
// read).
func (s *Store) Snapshot(ctx context.Context, eventID string) (tier1.Snapshot, error) {
	st, err := s.read(ctx, eventID)
	if err != nil {
		return tier1.Snapshot{}, err
	}
	return st.snap, nil
}

// errTorn is a read that saw shard items of another shard count than the
// event item: a shard-count change committed between the item reads.
var errTorn = errors.New("dynamostore: shard items disagree with the event's shard count")

// maxReads bounds the re-reads after a torn read. A shard count may only
// change before any position is handed out, so tearing is rare and brief.
const maxReads = 3

// read fetches the event item together with the shard keys remembered from
// the last read: one BatchGetItem round trip when warm. Only when nothing is
// remembered or the event item names another shard count (it may change only
// before any position is handed out) does a second call fetch the missing
// shards. BatchGetItem reads items one by one, not as a transaction, so
// every shard item must agree with the event's shard count, or the read is
// repeated.
func (s *Store) read(ctx context.Context, eventID string) (state, error) {
	for attempt := 1; ; attempt++ {
		st, err := s.readOnce(ctx, eventID)
		if errors.Is(err, errTorn) {
			if attempt < maxReads {
				continue
			}
			// Shard counts keep changing under the read: try again later.
			return state{}, fmt.Errorf("dynamostore: snapshot %s: %w: %v", eventID, tier1.ErrUnavailable, err)
		}
		if err != nil {
			return state{}, wrap("snapshot "+eventID, err)
		}
		return st, nil
	}
}

func (s *Store) readOnce(ctx context.Context, eventID string) (state, error) {
	guess, _ := s.remembered(eventID)
	asked := append([]itemKey{eventKey(eventID)}, guess.shardKeys(eventID)...)
	items, err := s.batchGet(ctx, asked)
	if err != nil {
		return state{}, err
	}
	st := state{snap: tier1.Snapshot{Event: tier1.Event{ID: eventID}}}
	raw, ok := items[eventKey(eventID)]
	if !ok {
		s.forget(eventID)
		return st, nil
	}
	var ev eventItem
	if err := attributevalue.UnmarshalMap(raw, &ev); err != nil {
		return state{}, fmt.Errorf("decode event item: %w", err)
	}
	st.snap.Found, st.snap.Event = true, ev.event(eventID)
	st.layout = layout{shards: ev.Shards, legacy: ev.Layout != ownPartitions}

	seen := make(map[itemKey]bool, len(asked))
	for _, k := range asked {
		seen[k] = true
	}
	var missing []itemKey
	for _, k := range st.layout.shardKeys(eventID) {
		if !seen[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		more, err := s.batchGet(ctx, missing)
		if err != nil {
			return state{}, err
		}
		for k, v := range more {
			items[k] = v
		}
	}

	st.snap.Counters = make([]int64, ev.Shards)
	for k := range ev.Shards {
		raw, ok := items[shardKey(eventID, k)]
		moved := ok
		if !ok && st.layout.legacy {
			raw, ok = items[legacyShardKey(eventID, k)]
		}
		if !ok {
			continue
		}
		var sh shardItem
		if err := attributevalue.UnmarshalMap(raw, &sh); err != nil {
			return state{}, fmt.Errorf("decode shard %d: %w", k, err)
		}
		// A fenced legacy shard (n = 0, see migrate) holds its final count.
		if sh.N != ev.Shards && (moved || sh.N != fenced) {
			return state{}, fmt.Errorf("%w: shard %d has n=%d, event %d", errTorn, k, sh.N, ev.Shards)
		}
		st.snap.Counters[k] = sh.C
		if !moved {
			st.pending = append(st.pending, k)
		}
	}
	s.remember(eventID, st.layout)
	return st, nil
}

// BatchGetItem limits and the backoff between retries of unprocessed keys.
const (
	maxBatchKeys     = 100
	maxBatchAttempts = 5
	batchBackoff     = 20 * time.Millisecond
)

// batchGet reads keys from the events table with strongly consistent
// BatchGetItem calls of at most 100 keys, and returns the items it found by
// key. DynamoDB may leave keys unprocessed when a partition is over its
// throughput; they are retried with exponential backoff and jitter, and
// still unprocessed after maxBatchAttempts calls they are tier1.ErrThrottled.
func (s *Store) batchGet(ctx context.Context, keys []itemKey) (map[itemKey]map[string]types.AttributeValue, error) {
	table := s.cfg.EventsTable
	found := make(map[itemKey]map[string]types.AttributeValue, len(keys))
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), maxBatchKeys)]
		keys = keys[len(chunk):]
		req := make([]map[string]types.AttributeValue, len(chunk))
		for i, k := range chunk {
			av, err := attributevalue.MarshalMap(k)
			if err != nil {
				return nil, fmt.Errorf("encode key %+v: %w", k, err)
			}
			req[i] = av
		}
		for attempt := 1; ; attempt++ {
			out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{
					table: {Keys: req, ConsistentRead: aws.Bool(true)},
				},
			})
			if err != nil {
				return nil, err
			}
			for _, it := range out.Responses[table] {
				var k itemKey
				if err := attributevalue.UnmarshalMap(it, &k); err != nil {
					return nil, fmt.Errorf("decode key: %w", err)
				}
				found[k] = it
			}
			req = out.UnprocessedKeys[table].Keys
			if len(req) == 0 {
				break
			}
			if attempt == maxBatchAttempts {
				return nil, fmt.Errorf("%w: %d keys still unprocessed after %d BatchGetItem calls", tier1.ErrThrottled, len(req), attempt)
			}
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return nil, err
			}
		}
	}
	return found, nil
}

// backoff is the wait before retry n (1, 2, …): batchBackoff·2^(n−1), the
// upper half of it jittered.
func backoff(n int) time.Duration {
	d := batchBackoff << (n - 1)
	return d/2 + rand.N(d/2)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
