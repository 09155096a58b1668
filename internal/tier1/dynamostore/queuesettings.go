package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/services/queue"
)

// Tier 2's settings live in the events table too (queue.ConfigStore):
//   - pk=<eventId>, sk="queue": threshold, open, version. An item of its
//     own, so Tier 1's event item and its layout migration never see it;
//   - pk="#registry", sk="queue-version": v, bumped by every write, so an
//     instance re-reads all settings only when something changed.

var _ queue.ConfigStore = (*Store)(nil)

const (
	skQueue        = "queue"
	queueVersionSK = "queue-version"
)

func queueKey(eventID string) itemKey { return itemKey{PK: eventID, SK: skQueue} }
func queueVersionKey() itemKey        { return itemKey{PK: registryPK, SK: queueVersionSK} }

// queueItem is an event's Tier 2 settings item.
type queueItem struct {
	PK        string `dynamodbav:"pk"`
	Threshold int64  `dynamodbav:"threshold"`
	Open      bool   `dynamodbav:"open"`
	Version   int64  `dynamodbav:"version"`
}

func (q queueItem) settings() queue.EventSettings {
	return queue.EventSettings{Threshold: q.Threshold, Open: q.Open, Version: q.Version}
}

// scanAPI is the Scan call QueueSettings needs. The SDK client has it; it
// is asserted here rather than added to API, whose fakes predate it.
type scanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// QueueSettingsVersion reads the version item (strongly consistent).
func (s *Store) QueueSettingsVersion(ctx context.Context) (int64, error) {
	var v struct {
		V int64 `dynamodbav:"v"`
	}
	if _, err := s.readItem(ctx, s.cfg.EventsTable, queueVersionKey(), "queue settings version", &v); err != nil {
		return 0, err
	}
	return v.V, nil
}

// QueueSettings reads the version, then scans the events table for the
// settings items (strongly consistent, every page). The table also holds
// Tier 1's items; the scan reads them and drops them, which is why Settings
// only calls this when the version moved.
func (s *Store) QueueSettings(ctx context.Context) (map[string]queue.EventSettings, int64, error) {
	v, err := s.QueueSettingsVersion(ctx)
	if err != nil {
		return nil, 0, err
	}
	sc, ok := s.db.(scanAPI)
	if !ok {
		return nil, 0, errors.New("dynamostore: queue settings: the DynamoDB client cannot Scan")
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":q": skQueue})
	if err != nil {
		return nil, 0, fmt.Errorf("dynamostore: queue settings: %w", err)
	}
	out := map[string]queue.EventSettings{}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.cfg.EventsTable),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("sk = :q"),
		ExpressionAttributeValues: vals,
	}
	for {
		page, err := sc.Scan(ctx, in)
		if err != nil {
			return nil, 0, wrap("queue settings", err)
		}
		var items []queueItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, 0, fmt.Errorf("dynamostore: queue settings: %w", err)
		}
		for _, it := range items {
			out[it.PK] = it.settings()
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, v, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// PutQueueSettings bumps the version item, then writes the event's settings
// item with that version, unless a write with a newer version got there
// first (then that one is returned). A failure between the two writes only
// leaves a version with no change behind: the next refresh reads once more.
func (s *Store) PutQueueSettings(ctx context.Context, eventID string, es queue.EventSettings) (queue.EventSettings, error) {
	tbl := aws.String(s.cfg.EventsTable)
	vKey, err := attributevalue.MarshalMap(queueVersionKey())
	if err != nil {
		return queue.EventSettings{}, fmt.Errorf("dynamostore: put queue settings %s: %w", eventID, err)
	}
	one, err := attributevalue.MarshalMap(map[string]any{":one": 1})
	if err != nil {
		return queue.EventSettings{}, fmt.Errorf("dynamostore: put queue settings %s: %w", eventID, err)
	}
	bumped, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: vKey, UpdateExpression: aws.String("ADD v :one"),
		ExpressionAttributeValues: one, ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return queue.EventSettings{}, wrap("put queue settings "+eventID, err)
	}
	var nv struct {
		V int64 `dynamodbav:"v"`
	}
	if err := attributevalue.UnmarshalMap(bumped.Attributes, &nv); err != nil {
		return queue.EventSettings{}, fmt.Errorf("dynamostore: put queue settings %s: %w", eventID, err)
	}
	key, err := attributevalue.MarshalMap(queueKey(eventID))
	if err != nil {
		return queue.EventSettings{}, fmt.Errorf("dynamostore: put queue settings %s: %w", eventID, err)
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":t": es.Threshold, ":o": es.Open, ":v": nv.V})
	if err != nil {
		return queue.EventSettings{}, fmt.Errorf("dynamostore: put queue settings %s: %w", eventID, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key,
		UpdateExpression:          aws.String("SET threshold = :t, #o = :o, version = :v"),
		ConditionExpression:       aws.String("attribute_not_exists(version) OR version < :v"),
		ExpressionAttributeNames:  map[string]string{"#o": "open"},
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return s.queueSettingsOf(ctx, eventID)
	}
	if err != nil {
		return queue.EventSettings{}, wrap("put queue settings "+eventID, err)
	}
	return queue.EventSettings{Threshold: es.Threshold, Open: es.Open, Version: nv.V}, nil
}

// queueSettingsOf reads one event's settings item (strongly consistent).
func (s *Store) queueSettingsOf(ctx context.Context, eventID string) (queue.EventSettings, error) {
	var it queueItem
	if _, err := s.readItem(ctx, s.cfg.EventsTable, queueKey(eventID), "queue settings "+eventID, &it); err != nil {
		return queue.EventSettings{}, err
	}
	return it.settings(), nil
}
