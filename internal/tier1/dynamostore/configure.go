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

	"github.com/vwr-go/vwr/internal/tier1"
)

// maxTransactItems is DynamoDB's limit on items per TransactWriteItems.
const maxTransactItems = 100

// errRaced is a Configure whose read went stale before its write: another
// Configure changed the event's shard count or layout in between.
var errRaced = errors.New("dynamostore: event changed during configure")

// powName aliases the event item's pow attribute in update expressions,
// as a precaution against DynamoDB's long list of reserved words.
var powName = map[string]string{"#pow": "pow"}

// maxConfigureAttempts bounds the re-reads after errRaced.
const maxConfigureAttempts = 3

// Configure writes the settings, the shard items and the registry. When the
// shard count is unchanged (pause, resume, a new batch size) it writes only
// the event item and the registry, so an admin change during a flood does
// not contend with the enters' ADDs. Otherwise one transaction writes the
// event item, creates shards 0..n-1 at zero and deletes the shards beyond n;
// each shard is conditioned on "no position handed out or already this
// count", so a shard-count change after the first position cancels it all
// (tier1.ErrInvalidConfig). The event item is conditioned on the shard count
// and layout just read, so two racing Configures cannot leave shard items
// of another count behind. A legacy event (layout 1) is migrated first.
func (s *Store) Configure(ctx context.Context, eventID string, st tier1.Settings, now time.Time) error {
	for attempt := 1; ; attempt++ {
		err := s.configure(ctx, eventID, st, now)
		if !errors.Is(err, errRaced) {
			return err
		}
		if attempt == maxConfigureAttempts {
			return fmt.Errorf("dynamostore: configure %s: %w: %v", eventID, tier1.ErrUnavailable, err)
		}
	}
}

func (s *Store) configure(ctx context.Context, eventID string, st tier1.Settings, now time.Time) error {
	cur, err := s.read(ctx, eventID)
	if err != nil {
		return err
	}
	if len(cur.pending) > 0 {
		if err := s.migrate(ctx, eventID, cur); err != nil {
			return err
		}
	}
	set := "SET active = :a, paused = :p, shards = :n, batchSize = :b, #pow = :pow, updatedAt = :now, layout = :own, " +
		"servingCounter = if_not_exists(servingCounter, :zero), tickSlot = if_not_exists(tickSlot, :zero)"
	vals, err := attributevalue.MarshalMap(map[string]any{
		":a": st.Active, ":p": st.Paused, ":n": st.Shards, ":b": st.BatchSize, ":pow": st.Pow,
		":now": now.UnixMilli(), ":zero": 0, ":own": ownPartitions, ":m": cur.layout.shards,
	})
	if err != nil {
		return fmt.Errorf("dynamostore: configure %s: %w", eventID, err)
	}
	evKey, err := attributevalue.MarshalMap(eventKey(eventID))
	if err != nil {
		return fmt.Errorf("dynamostore: configure %s: %w", eventID, err)
	}
	tbl := aws.String(s.cfg.EventsTable)

	if cur.snap.Found && !cur.layout.legacy && st.Shards == cur.layout.shards {
		delete(vals, ":m")
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: tbl, Key: evKey, UpdateExpression: aws.String(set),
			ConditionExpression:       aws.String("shards = :n AND layout = :own"),
			ExpressionAttributeNames:  powName,
			ExpressionAttributeValues: vals,
		})
		if conditionFailed(err) {
			return errRaced
		}
		if err != nil {
			return wrap("configure "+eventID, err)
		}
		s.remember(eventID, layout{shards: st.Shards})
		return s.register(ctx, eventID, st.Active, now)
	}

	cond := "attribute_not_exists(pk)"
	switch {
	case cur.snap.Found && cur.layout.legacy:
		cond = "shards = :m AND attribute_not_exists(layout)"
	case cur.snap.Found:
		cond = "shards = :m AND layout = :own"
	default:
		delete(vals, ":m")
	}
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName: tbl, Key: evKey, UpdateExpression: aws.String(set),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: powName, ExpressionAttributeValues: vals,
	}}}
	shardVals, err := attributevalue.MarshalMap(map[string]any{":n": st.Shards, ":zero": 0})
	if err != nil {
		return fmt.Errorf("dynamostore: configure %s: %w", eventID, err)
	}
	zero, err := attributevalue.MarshalMap(map[string]any{":zero": 0})
	if err != nil {
		return fmt.Errorf("dynamostore: configure %s: %w", eventID, err)
	}
	for k := range max(st.Shards, cur.layout.shards) {
		key, err := attributevalue.MarshalMap(shardKey(eventID, k))
		if err != nil {
			return fmt.Errorf("dynamostore: configure %s: %w", eventID, err)
		}
		if k < st.Shards {
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName: tbl, Key: key,
				UpdateExpression:          aws.String("SET n = :n, c = if_not_exists(c, :zero)"),
				ConditionExpression:       aws.String("attribute_not_exists(c) OR c = :zero OR n = :n"),
				ExpressionAttributeValues: shardVals,
			}})
			continue
		}
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{
			TableName: tbl, Key: key,
			ConditionExpression:       aws.String("attribute_not_exists(c) OR c = :zero"),
			ExpressionAttributeValues: zero,
		}})
	}
	reg, err := s.registryUpdate(eventID, st.Active)
	if err != nil {
		return err
	}
	cat, err := s.catalogUpdate(eventID, now)
	if err != nil {
		return err
	}
	items = append(items, types.TransactWriteItem{Update: reg}, types.TransactWriteItem{Update: cat})
	if len(items) > maxTransactItems {
		return fmt.Errorf("%w: too many shards to change at once", tier1.ErrInvalidConfig)
	}
	_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	switch failed := failedConditions(err); {
	case len(failed) > 0 && failed[0] == 0:
		return errRaced
	case len(failed) > 0:
		return fmt.Errorf("%w: shards cannot change after positions were handed out", tier1.ErrInvalidConfig)
	case err != nil:
		return wrap("configure "+eventID, err)
	}
	s.remember(eventID, layout{shards: st.Shards})
	return nil
}

// migrate moves a legacy event's shards to their own partition keys, two
// writes per shard. First it fences the legacy item (n = 0) and reads its
// counter in the same UpdateItem: from then on every ADD on it fails its
// `n = :n` condition, so the counter is final. Then it creates the shard's
// own item with that counter. An enter racing the move either lands before
// the fence and is carried over, or fails over to the new key (Assign) and,
// in the moment between the two writes, gets ErrConflict and is retried by
// the Service; no position is handed out twice. A condition on the counter
// itself instead of a fence would lose to every enter on a busy shard.
//
// Each step is idempotent, so a failed migration resumes with the next
// Configure, and Snapshot reads both keys meanwhile. The fenced items stay:
// they refuse every ADD, which also keeps an older vwr that is rolled back
// from handing out those positions again. The Configure transaction that
// follows marks the event item.
func (s *Store) migrate(ctx context.Context, eventID string, cur state) error {
	tbl := aws.String(s.cfg.EventsTable)
	vals, err := attributevalue.MarshalMap(map[string]any{":n": cur.layout.shards, ":fenced": fenced})
	if err != nil {
		return fmt.Errorf("dynamostore: migrate %s: %w", eventID, err)
	}
	for _, k := range cur.pending {
		old, err := attributevalue.MarshalMap(legacyShardKey(eventID, k))
		if err != nil {
			return fmt.Errorf("dynamostore: migrate %s: %w", eventID, err)
		}
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: tbl, Key: old,
			UpdateExpression:          aws.String("SET n = :fenced"),
			ConditionExpression:       aws.String("n = :n OR n = :fenced"),
			ExpressionAttributeValues: vals,
			ReturnValues:              types.ReturnValueAllNew,
		})
		if conditionFailed(err) {
			return errRaced // the item vanished or belongs to another count
		}
		if err != nil {
			return wrap(fmt.Sprintf("migrate %s: fence shard %d", eventID, k), err)
		}
		var sh shardItem
		if err := attributevalue.UnmarshalMap(out.Attributes, &sh); err != nil {
			return fmt.Errorf("dynamostore: migrate %s: decode shard %d: %w", eventID, k, err)
		}
		key, err := attributevalue.MarshalMap(shardKey(eventID, k))
		if err != nil {
			return fmt.Errorf("dynamostore: migrate %s: %w", eventID, err)
		}
		cv, err := attributevalue.MarshalMap(map[string]any{":c": sh.C, ":n": cur.layout.shards})
		if err != nil {
			return fmt.Errorf("dynamostore: migrate %s: %w", eventID, err)
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: tbl, Key: key,
			UpdateExpression:          aws.String("SET c = :c, n = :n"),
			ConditionExpression:       aws.String("attribute_not_exists(c)"),
			ExpressionAttributeValues: cv,
		})
		if err != nil && !conditionFailed(err) { // failed: a racing migration made it
			return wrap(fmt.Sprintf("migrate %s: move shard %d", eventID, k), err)
		}
	}
	return nil
}

// register adds the event to, or removes it from, the active-events
// registry, and notes the change in the events index.
func (s *Store) register(ctx context.Context, eventID string, active bool, now time.Time) error {
	reg, err := s.registryUpdate(eventID, active)
	if err != nil {
		return err
	}
	cat, err := s.catalogUpdate(eventID, now)
	if err != nil {
		return err
	}
	for _, u := range []*types.Update{reg, cat} {
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ExpressionAttributeValues: u.ExpressionAttributeValues,
		})
		if err != nil {
			return wrap("register "+eventID, err)
		}
	}
	return nil
}

// catalogUpdate writes eventID's item of the events index.
func (s *Store) catalogUpdate(eventID string, now time.Time) (*types.Update, error) {
	key, err := attributevalue.MarshalMap(catalogKey(eventID))
	if err != nil {
		return nil, fmt.Errorf("dynamostore: index %s: %w", eventID, err)
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":now": now.UnixMilli()})
	if err != nil {
		return nil, fmt.Errorf("dynamostore: index %s: %w", eventID, err)
	}
	return &types.Update{
		TableName:                 aws.String(s.cfg.EventsTable),
		Key:                       key,
		UpdateExpression:          aws.String("SET updatedAt = :now"),
		ExpressionAttributeValues: vals,
	}, nil
}

// registryUpdate adds eventID to the registry's set when active, else
// removes it.
func (s *Store) registryUpdate(eventID string, active bool) (*types.Update, error) {
	op := "DELETE"
	if active {
		op = "ADD"
	}
	key, err := attributevalue.MarshalMap(registryKey())
	if err != nil {
		return nil, fmt.Errorf("dynamostore: registry key: %w", err)
	}
	vals, err := attributevalue.MarshalMap(struct {
		ID []string `dynamodbav:":id,stringset"`
	}{[]string{eventID}})
	if err != nil {
		return nil, fmt.Errorf("dynamostore: registry %s: %w", eventID, err)
	}
	return &types.Update{
		TableName:                 aws.String(s.cfg.EventsTable),
		Key:                       key,
		UpdateExpression:          aws.String(op + " ids :id"),
		ExpressionAttributeValues: vals,
	}, nil
}
