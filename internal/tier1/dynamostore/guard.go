package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/vwr-go/vwr/internal/tier1"
)

// The door's items live in the positions table, whose key is one random
// requestId per visitor: a spent challenge and a client's counter are
// spread over its partitions by their own keys (a challenge hash, a keyed
// hash of the client), away from the events table's counter shards.
const (
	spentPrefix   = "pow#"    // + eventId + "#" + challenge
	arrivalPrefix = "client#" // + eventId + "#" + client key + "#" + window
	noKey         = "-"       // a spent record's key hash without an Idempotency-Key
)

var _ tier1.GuardStore = (*Store)(nil)

// spentItem records one spent challenge until it expires (about 60 bytes).
type spentItem struct {
	RequestID string `dynamodbav:"requestId"`
	KeyHash   string `dynamodbav:"k"`
	TTL       int64  `dynamodbav:"ttl"` // unix s: the challenge's expiry
}

func spentID(eventID, challenge string) string { return spentPrefix + eventID + "#" + challenge }

func arrivalID(eventID, client string, window int64) string {
	return arrivalPrefix + eventID + "#" + client + "#" + strconv.FormatInt(window, 10)
}

// SpendSolution puts the spent record on condition that none exists; a
// refused put returns the existing record (ReturnValuesOnConditionCheckFailure),
// read again only where the endpoint does not return it.
func (s *Store) SpendSolution(ctx context.Context, sol tier1.Solution) (tier1.Spend, error) {
	kh := sol.KeyHash
	if kh == "" {
		kh = noKey
	}
	id := spentID(sol.EventID, sol.Challenge)
	write := kh
	if sol.Unclaimed {
		write = noKey
	}
	item, err := attributevalue.MarshalMap(spentItem{RequestID: id, KeyHash: write, TTL: sol.Expires.Unix()})
	if err != nil {
		return 0, fmt.Errorf("dynamostore: spend solution %s: %w", sol.EventID, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.cfg.PositionsTable),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(requestId)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return tier1.SpendFirst, nil
	}
	if !conditionFailed(err) {
		return 0, wrap("spend solution "+sol.EventID, err)
	}
	var prev spentItem
	if ccf := conditionFailure(err); ccf != nil && len(ccf.Item) > 0 {
		if err := attributevalue.UnmarshalMap(ccf.Item, &prev); err != nil {
			return 0, fmt.Errorf("dynamostore: spend solution %s: decode: %w", sol.EventID, err)
		}
	} else if _, err := s.readItem(ctx, s.cfg.PositionsTable, recordKey{RequestID: id}, "spent solution "+sol.EventID, &prev); err != nil {
		return 0, err
	}
	if prev.KeyHash == kh && kh != noKey {
		return tier1.SpendRetry, nil
	}
	return tier1.SpendReplayed, nil
}

// ClaimSolution writes the key hash into the record, on condition that it
// exists.
func (s *Store) ClaimSolution(ctx context.Context, sol tier1.Solution) error {
	if sol.KeyHash == "" {
		return nil
	}
	key, err := attributevalue.MarshalMap(recordKey{RequestID: spentID(sol.EventID, sol.Challenge)})
	if err != nil {
		return fmt.Errorf("dynamostore: claim solution %s: %w", sol.EventID, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.PositionsTable),
		Key:                       key,
		UpdateExpression:          aws.String("SET k = :k"),
		ConditionExpression:       aws.String("attribute_exists(requestId)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: sol.KeyHash}},
	})
	if err != nil && !conditionFailed(err) {
		return wrap("claim solution "+sol.EventID, err)
	}
	return nil
}

// CountArrival adds one to the client's counter on condition that it is
// below the limit; a refused update writes nothing.
func (s *Store) CountArrival(ctx context.Context, a tier1.ArrivalCount) (int64, bool, error) {
	key, err := attributevalue.MarshalMap(recordKey{RequestID: arrivalID(a.EventID, a.Client, a.Window)})
	if err != nil {
		return 0, false, fmt.Errorf("dynamostore: count arrival %s: %w", a.EventID, err)
	}
	vals, err := attributevalue.MarshalMap(map[string]any{":one": 1, ":limit": a.Limit, ":ttl": a.Expires.Unix()})
	if err != nil {
		return 0, false, fmt.Errorf("dynamostore: count arrival %s: %w", a.EventID, err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.cfg.PositionsTable),
		Key:                                 key,
		UpdateExpression:                    aws.String("ADD n :one SET #ttl = if_not_exists(#ttl, :ttl)"),
		ConditionExpression:                 aws.String("attribute_not_exists(n) OR n < :limit"),
		ExpressionAttributeNames:            map[string]string{"#ttl": attrTTL},
		ExpressionAttributeValues:           vals,
		ReturnValues:                        types.ReturnValueUpdatedNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var c struct {
		N int64 `dynamodbav:"n"`
	}
	if conditionFailed(err) {
		if ccf := conditionFailure(err); ccf != nil && len(ccf.Item) > 0 {
			_ = attributevalue.UnmarshalMap(ccf.Item, &c)
		}
		return max(c.N, a.Limit), false, nil
	}
	if err != nil {
		return 0, false, wrap("count arrival "+a.EventID, err)
	}
	if err := attributevalue.UnmarshalMap(out.Attributes, &c); err != nil {
		return 0, false, fmt.Errorf("dynamostore: count arrival %s: decode: %w", a.EventID, err)
	}
	return c.N, true, nil
}
