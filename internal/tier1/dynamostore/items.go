package dynamostore

import (
	"fmt"
	"time"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/tier1"
)

// Key attributes of the two tables.
const (
	attrPK    = "pk"
	attrSK    = "sk"
	attrReqID = "requestId"
	attrTTL   = "ttl"
)

// Events-table keys; see the package doc for the layout.
const (
	skEvent    = "event"
	skShard    = "shard"
	registryPK = "#registry"
	registrySK = "active"
	// catalogPK is the partition of the events index: one item per event
	// ever configured (sk = the event id), for the operator's event list.
	catalogPK = "#events"
	// legacySKPrefix + NN is a shard's sort key in layout 1, where every
	// shard shared the event's partition key.
	legacySKPrefix = "shard#"
	// ownPartitions is the event item's `layout` once its shards live under
	// their own partition keys. Events written before it have no `layout`.
	ownPartitions = 2
	// fenced is the n of a legacy shard item whose counter was copied to the
	// shard's own key: every `ADD c :1` on it fails its `n = :n` condition.
	fenced = 0
)

// idemPrefix starts an idempotency record's requestId, which a random
// requestId (base64url) can never contain.
const idemPrefix = "idem#"

// itemKey is an events-table key.
type itemKey struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
}

func eventKey(eventID string) itemKey { return itemKey{PK: eventID, SK: skEvent} }

// shardKey is shard k's own partition key: '#' never occurs in an event id
// (^[A-Za-z0-9_-]{1,64}$), so it cannot collide with an event or the registry.
func shardKey(eventID string, k int) itemKey {
	return itemKey{PK: fmt.Sprintf("%s#s%02d", eventID, k), SK: skShard}
}

// legacyShardKey is shard k's key in layout 1, under the event's partition.
func legacyShardKey(eventID string, k int) itemKey {
	return itemKey{PK: eventID, SK: fmt.Sprintf("%s%02d", legacySKPrefix, k)}
}

func registryKey() itemKey { return itemKey{PK: registryPK, SK: registrySK} }

func catalogKey(eventID string) itemKey { return itemKey{PK: catalogPK, SK: eventID} }

// catalogItem is one event of the events index.
type catalogItem struct {
	SK        string `dynamodbav:"sk"`
	UpdatedAt int64  `dynamodbav:"updatedAt"` // unix ms of the last Configure
}

func idemID(eventID, key string) string { return idemPrefix + eventID + "#" + key }

// eventItem is an event's config item. It is only ever changed by update
// expressions, so the store only decodes it.
type eventItem struct {
	Active         bool          `dynamodbav:"active"`
	Paused         bool          `dynamodbav:"paused"`
	Shards         int           `dynamodbav:"shards"`
	BatchSize      int64         `dynamodbav:"batchSize"`
	Pow            int64         `dynamodbav:"pow"` // absent on events written before it: none
	ServingCounter int64         `dynamodbav:"servingCounter"`
	UpdatedAt      int64         `dynamodbav:"updatedAt"` // unix ms
	TickSlot       int64         `dynamodbav:"tickSlot"`
	Advances       []advanceItem `dynamodbav:"advances"`
	Layout         int           `dynamodbav:"layout"`
	// The scheduled sale's summary (sale.go).
	SalePhase int    `dynamodbav:"salePhase"`
	SaleOpens int64  `dynamodbav:"saleOpens"`
	SaleFrom  int64  `dynamodbav:"saleFrom"`
	SaleRound uint64 `dynamodbav:"saleRound"`
	SaleRoot  []byte `dynamodbav:"saleRoot"`
}

func (e eventItem) event(eventID string) tier1.Event {
	ev := tier1.Event{
		ID: eventID,
		Settings: tier1.Settings{
			Active: e.Active, Paused: e.Paused, Shards: e.Shards, BatchSize: e.BatchSize, Pow: e.Pow,
		},
		ServingCounter: e.ServingCounter,
		UpdatedAt:      clock.FromUnixMilli(e.UpdatedAt),
		TickSlot:       e.TickSlot,
		Sale: tier1.SaleSummary{
			Phase: e.SalePhase, OpensAt: clock.FromUnixMilli(e.SaleOpens), PrequeueFrom: clock.FromUnixMilli(e.SaleFrom),
			Round: e.SaleRound, Root: e.SaleRoot,
		},
	}
	for _, a := range e.Advances {
		ev.Advances = append(ev.Advances, tier1.Advance{At: clock.FromUnixMilli(a.T), Admitted: a.N})
	}
	return ev
}

// advanceItem is one entry of the event item's `advances` list.
type advanceItem struct {
	T int64 `dynamodbav:"t"` // unix ms
	N int64 `dynamodbav:"n"` // visitors admitted
}

func advanceItems(as []tier1.Advance) []advanceItem {
	out := make([]advanceItem, 0, len(as)) // non-nil: stored as an empty list, not NULL
	for _, a := range as {
		out = append(out, advanceItem{T: a.At.UnixMilli(), N: a.Admitted})
	}
	return out
}

// shardItem is one counter shard: c positions handed out, for a line of n shards.
type shardItem struct {
	C int64 `dynamodbav:"c"`
	N int   `dynamodbav:"n"`
}

// registryItem lists the active events.
type registryItem struct {
	IDs []string `dynamodbav:"ids,stringset"`
}

// recordKey is a positions-table key.
type recordKey struct {
	RequestID string `dynamodbav:"requestId"`
}

// positionRecord is a positions-table item: a visitor's position, or with
// Target set, the first answer to an Idempotency-Key.
type positionRecord struct {
	RequestID string `dynamodbav:"requestId"`
	EventID   string `dynamodbav:"eventId"`
	Position  int64  `dynamodbav:"position"`
	Shard     int    `dynamodbav:"shard"`
	CreatedAt int64  `dynamodbav:"createdAt"` // unix ms
	TTL       int64  `dynamodbav:"ttl"`       // unix s
	Target    string `dynamodbav:"target,omitempty"`
}

func newRecord(pos tier1.Position, expires time.Time) positionRecord {
	return positionRecord{
		RequestID: pos.RequestID, EventID: pos.EventID, Position: pos.Position,
		Shard: pos.Shard, CreatedAt: pos.CreatedAt.UnixMilli(), TTL: expires.Unix(),
	}
}

// position is the visitor's position a record holds, under requestID.
func (r positionRecord) position(requestID string) tier1.Position {
	return tier1.Position{
		RequestID: requestID, EventID: r.EventID, Position: r.Position,
		Shard: r.Shard, CreatedAt: clock.FromUnixMilli(r.CreatedAt),
	}
}
