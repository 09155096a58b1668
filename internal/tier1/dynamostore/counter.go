package dynamostore

import (
	"context"
	"sort"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Counter is an SDK middleware that counts DynamoDB calls per operation, and
// reads and writes per item key ("table/pk=…/sk=…") and per partition key
// ("table/pk=…"), once per logical call (the SDK's retries are not counted
// again). DynamoDB limits each partition to 1,000 writes/s and 3,000 reads/s,
// so the hottest partition's share of the writes bounds an event's enter
// rate (docs/tier1-design.md). The tests and BenchmarkEnterPartitionShare
// report writes per visitor and the hottest shares from it. Register it with
// Config.APIOptions.
type Counter struct {
	mu    sync.Mutex
	calls map[string]int64
	items map[string]*KeyCount
	parts map[string]*KeyCount
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	c := &Counter{}
	c.Reset()
	return c
}

// Register adds the counting middleware to an SDK stack.
func (c *Counter) Register(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("vwrItemCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.observe(awsmiddleware.GetOperationName(ctx), in.Parameters)
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// keyAttrs are the key attribute names of the store's tables, in key order;
// hashAttrs are the partition (hash) keys among them.
var (
	keyAttrs  = []string{attrPK, attrSK, attrReqID}
	hashAttrs = map[string]bool{attrPK: true, attrReqID: true}
)

// access is one item read or written.
type access struct {
	item, partition string
	write           bool
}

func accessOf(table *string, key map[string]types.AttributeValue, write bool) access {
	var item, part strings.Builder
	if table != nil {
		item.WriteString(*table)
		part.WriteString(*table)
	}
	for _, a := range keyAttrs {
		v, ok := key[a].(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		item.WriteString("/" + a + "=" + v.Value)
		if hashAttrs[a] {
			part.WriteString("/" + a + "=" + v.Value)
		}
	}
	return access{item: item.String(), partition: part.String(), write: write}
}

func accesses(params any) []access {
	var as []access
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		as = append(as, accessOf(in.TableName, in.Key, false))
	case *dynamodb.BatchGetItemInput:
		for table, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				as = append(as, accessOf(&table, k, false))
			}
		}
	case *dynamodb.PutItemInput:
		as = append(as, accessOf(in.TableName, in.Item, true))
	case *dynamodb.UpdateItemInput:
		as = append(as, accessOf(in.TableName, in.Key, true))
	case *dynamodb.DeleteItemInput:
		as = append(as, accessOf(in.TableName, in.Key, true))
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				as = append(as, accessOf(it.Put.TableName, it.Put.Item, true))
			case it.Update != nil:
				as = append(as, accessOf(it.Update.TableName, it.Update.Key, true))
			case it.Delete != nil:
				as = append(as, accessOf(it.Delete.TableName, it.Delete.Key, true))
			case it.ConditionCheck != nil:
				as = append(as, accessOf(it.ConditionCheck.TableName, it.ConditionCheck.Key, false))
			}
		}
	}
	return as
}

func (c *Counter) observe(op string, params any) {
	as := accesses(params)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
	for _, a := range as {
		bump(c.items, a.item, a.write)
		bump(c.parts, a.partition, a.write)
	}
}

func bump(m map[string]*KeyCount, key string, write bool) {
	kc := m[key]
	if kc == nil {
		kc = &KeyCount{Key: key}
		m[key] = kc
	}
	if write {
		kc.Writes++
	} else {
		kc.Reads++
	}
}

// KeyCount is the traffic of one item key or one partition key.
type KeyCount struct {
	Key    string
	Reads  int64
	Writes int64
}

// CounterStats is a Counter's totals, its items and its partitions, each
// most written first.
type CounterStats struct {
	// Calls counts logical calls per operation name ("BatchGetItem": 1).
	Calls         map[string]int64
	Reads, Writes int64
	Items         []KeyCount
	Partitions    []KeyCount
}

// HottestWriteShare is the share of all writes that went to the most
// written item (0 when nothing was written).
func (s CounterStats) HottestWriteShare() float64 { return hottest(s.Items, s.Writes) }

// HottestPartitionWriteShare is the share of all writes that went to the
// most written partition key (0 when nothing was written). Enters per second
// per event stay under DynamoDB's per-partition limit while this share ×
// writes per enter × enters/s ≤ 1,000.
func (s CounterStats) HottestPartitionWriteShare() float64 { return hottest(s.Partitions, s.Writes) }

func hottest(ks []KeyCount, writes int64) float64 {
	if writes == 0 || len(ks) == 0 {
		return 0
	}
	return float64(ks[0].Writes) / float64(writes)
}

// Stats returns the counts so far.
func (c *Counter) Stats() CounterStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := CounterStats{Calls: make(map[string]int64, len(c.calls))}
	for op, n := range c.calls {
		s.Calls[op] = n
	}
	for _, kc := range c.items {
		s.Items = append(s.Items, *kc)
		s.Reads += kc.Reads
		s.Writes += kc.Writes
	}
	for _, kc := range c.parts {
		s.Partitions = append(s.Partitions, *kc)
	}
	byTraffic(s.Items)
	byTraffic(s.Partitions)
	return s
}

// byTraffic sorts most written first, then most read, then by key.
func byTraffic(ks []KeyCount) {
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.Writes != b.Writes {
			return a.Writes > b.Writes
		}
		if a.Reads != b.Reads {
			return a.Reads > b.Reads
		}
		return a.Key < b.Key
	})
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.calls, c.items, c.parts = map[string]int64{}, map[string]*KeyCount{}, map[string]*KeyCount{}
	c.mu.Unlock()
}
