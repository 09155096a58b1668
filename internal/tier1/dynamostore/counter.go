package dynamostore

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Counter is an SDK middleware that counts DynamoDB reads and writes per
// item key ("table/attr=value/…"), once per logical call (retries are not
// counted again). The load tool reports writes per visitor and the hottest
// item's share from it. Register it with Config.APIOptions.
type Counter struct {
	mu     sync.Mutex
	reads  map[string]int64
	writes map[string]int64
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	return &Counter{reads: map[string]int64{}, writes: map[string]int64{}}
}

// Register adds the counting middleware to an SDK stack.
func (c *Counter) Register(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("vwrItemCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.observe(in.Parameters)
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// keyAttrs are the key attribute names of vwr's tables, in key order.
var keyAttrs = []string{"pk", "sk", "requestId"}

func itemKey(table *string, item map[string]types.AttributeValue) string {
	var b strings.Builder
	if table != nil {
		b.WriteString(*table)
	}
	for _, a := range keyAttrs {
		if v, ok := item[a].(*types.AttributeValueMemberS); ok {
			b.WriteString("/" + a + "=" + v.Value)
		}
	}
	return b.String()
}

func (c *Counter) observe(params any) {
	var reads, writes []string
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		reads = append(reads, itemKey(in.TableName, in.Key))
	case *dynamodb.QueryInput:
		reads = append(reads, itemKey(in.TableName, map[string]types.AttributeValue{"pk": in.ExpressionAttributeValues[":pk"]}))
	case *dynamodb.PutItemInput:
		writes = append(writes, itemKey(in.TableName, in.Item))
	case *dynamodb.UpdateItemInput:
		writes = append(writes, itemKey(in.TableName, in.Key))
	case *dynamodb.DeleteItemInput:
		writes = append(writes, itemKey(in.TableName, in.Key))
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				writes = append(writes, itemKey(it.Put.TableName, it.Put.Item))
			case it.Update != nil:
				writes = append(writes, itemKey(it.Update.TableName, it.Update.Key))
			case it.Delete != nil:
				writes = append(writes, itemKey(it.Delete.TableName, it.Delete.Key))
			case it.ConditionCheck != nil:
				reads = append(reads, itemKey(it.ConditionCheck.TableName, it.ConditionCheck.Key))
			}
		}
	}
	if len(reads)+len(writes) == 0 {
		return
	}
	c.mu.Lock()
	for _, k := range reads {
		c.reads[k]++
	}
	for _, k := range writes {
		c.writes[k]++
	}
	c.mu.Unlock()
}

// ItemCount is the traffic of one item key.
type ItemCount struct {
	Key    string
	Reads  int64
	Writes int64
}

// CounterStats is a Counter's totals and its items, most written first.
type CounterStats struct {
	Reads, Writes int64
	Items         []ItemCount
}

// HottestWriteShare is the share of all writes that went to the most
// written item (0 when nothing was written).
func (s CounterStats) HottestWriteShare() float64 {
	if s.Writes == 0 || len(s.Items) == 0 {
		return 0
	}
	return float64(s.Items[0].Writes) / float64(s.Writes)
}

// Stats returns the counts so far.
func (c *Counter) Stats() CounterStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	byKey := map[string]*ItemCount{}
	get := func(k string) *ItemCount {
		if byKey[k] == nil {
			byKey[k] = &ItemCount{Key: k}
		}
		return byKey[k]
	}
	var s CounterStats
	for k, n := range c.reads {
		get(k).Reads += n
		s.Reads += n
	}
	for k, n := range c.writes {
		get(k).Writes += n
		s.Writes += n
	}
	for _, ic := range byKey {
		s.Items = append(s.Items, *ic)
	}
	sort.Slice(s.Items, func(i, j int) bool {
		a, b := s.Items[i], s.Items[j]
		if a.Writes != b.Writes {
			return a.Writes > b.Writes
		}
		if a.Reads != b.Reads {
			return a.Reads > b.Reads
		}
		return a.Key < b.Key
	})
	return s
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.reads, c.writes = map[string]int64{}, map[string]int64{}
	c.mu.Unlock()
}
