// Package redisstore is the Tier 1 store on Redis (standalone or Cluster):
// what `vwr local` runs on with an embedded miniredis, and a real option for
// deployments without DynamoDB. Every per-event write is one Lua script over
// keys sharing the event's hash tag; keys come from keys.go.
package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/internal/tier1"
)

var (
	//go:embed assign.lua
	assignLua string
	//go:embed configure.lua
	configureLua string
	//go:embed advance.lua
	advanceLua string

	assignScript    = redis.NewScript(assignLua)
	configureScript = redis.NewScript(configureLua)
	advanceScript   = redis.NewScript(advanceLua)
)

// Store implements tier1.Store on Redis.
type Store struct {
	rdb  redis.UniversalClient
	keys keys
}

var _ tier1.Store = (*Store)(nil)

// Option tunes a Store.
type Option func(*Store)

// WithPrefix puts every key under prefix (tests isolate themselves with it).
func WithPrefix(prefix string) Option { return func(s *Store) { s.keys.prefix = prefix } }

// New returns a Store on rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb}
	for _, o := range opts {
		o(s)
	}
	return s
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Snapshot reads the event hash and its shard counters in one MULTI/EXEC.
func (s *Store) Snapshot(ctx context.Context, eventID string) (tier1.Snapshot, error) {
	var ev, sh *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ev = p.HGetAll(ctx, s.keys.event(eventID))
		sh = p.HGetAll(ctx, s.keys.shards(eventID))
		return nil
	})
	if err != nil {
		return tier1.Snapshot{}, fmt.Errorf("redisstore: snapshot %s: %w", eventID, err)
	}
	if len(ev.Val()) == 0 {
		return tier1.Snapshot{Event: tier1.Event{ID: eventID}}, nil
	}
	var h eventHash
	if err := ev.Scan(&h); err != nil {
		return tier1.Snapshot{}, fmt.Errorf("redisstore: snapshot %s: %w", eventID, err)
	}
	advances, err := decodeAdvances(h.Advances)
	if err != nil {
		return tier1.Snapshot{}, fmt.Errorf("redisstore: snapshot %s: %w", eventID, err)
	}
	sale, err := saleSummary(h.SalePhase, h.SaleOpens, h.SaleFrom, h.SaleRound, h.SaleRoot)
	if err != nil {
		return tier1.Snapshot{}, fmt.Errorf("redisstore: snapshot %s: %w", eventID, err)
	}
	e := tier1.Event{
		ID:             eventID,
		Settings:       tier1.Settings{Active: h.Active, Paused: h.Paused, Shards: h.Shards, BatchSize: h.Batch, Pow: h.Pow},
		ServingCounter: h.Serving, TickSlot: h.Slot,
		UpdatedAt: clock.FromUnixMilli(h.Updated), Advances: advances, Sale: sale,
	}
	counters := make([]int64, e.Shards)
	for f, v := range sh.Val() {
		k, err1 := strconv.Atoi(f)
		c, err2 := strconv.ParseInt(v, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return tier1.Snapshot{}, fmt.Errorf("redisstore: snapshot %s: shard %q=%q: %w", eventID, f, v, err)
		}
		if k >= 0 && k < e.Shards {
			counters[k] = c
		}
	}
	return tier1.Snapshot{Found: true, Event: e, Counters: counters}, nil
}

// eventHash is the {E}:event hash, decoded by go-redis (a malformed field is
// an error, not a zero).
type eventHash struct {
	Active   bool   `redis:"active"`
	Paused   bool   `redis:"paused"`
	Shards   int    `redis:"shards"`
	Batch    int64  `redis:"batch"`
	Pow      int64  `redis:"pow"`
	Serving  int64  `redis:"serving"`
	Slot     int64  `redis:"slot"`
	Updated  int64  `redis:"updated"`
	Advances string `redis:"adv"`
	// The scheduled sale's summary (sale.go).
	SalePhase int    `redis:"salephase"`
	SaleOpens int64  `redis:"saleopens"`
	SaleFrom  int64  `redis:"salefrom"`
	SaleRound uint64 `redis:"saleround"`
	SaleRoot  string `redis:"saleroot"`
}

// positionHash is a {E}:pos:<requestId> hash.
type positionHash struct {
	Position int64 `redis:"position"`
	Shard    int   `redis:"shard"`
	Created  int64 `redis:"created"`
}

// Configure writes the settings through configure.lua, then keeps the
// active-events set and the events index in step (outside the event's
// slot, so not in the script; the advancer re-checks each listed event's
// settings anyway), in one pipelined round trip.
func (s *Store) Configure(ctx context.Context, eventID string, st tier1.Settings, now time.Time) error {
	res, err := configureScript.Run(ctx, s.rdb,
		[]string{s.keys.event(eventID), s.keys.shards(eventID)},
		flag(st.Active), flag(st.Paused), st.Shards, st.BatchSize, now.UnixMilli(), st.Pow).Text()
	if err != nil {
		return fmt.Errorf("redisstore: configure %s: %w", eventID, err)
	}
	if res == "invalid" {
		return fmt.Errorf("%w: shards cannot change after positions were handed out", tier1.ErrInvalidConfig)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if st.Active {
			p.SAdd(ctx, s.keys.activeEvents(), eventID)
		} else {
			p.SRem(ctx, s.keys.activeEvents(), eventID)
		}
		p.ZAdd(ctx, s.keys.events(), redis.Z{Score: float64(now.UnixMilli()), Member: eventID})
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: configure %s: active set and index: %w", eventID, err)
	}
	return nil
}

// Assign runs assign.lua: the idempotency check, the shard increment and
// both records happen in one atomic script, so one key never gets two
// positions.
func (s *Store) Assign(ctx context.Context, p tier1.NewPosition) (tier1.Position, bool, error) {
	useIdem := "0"
	if p.IdempotencyKey != "" {
		useIdem = "1"
	}
	keys := []string{
		s.keys.event(p.EventID), s.keys.shards(p.EventID),
		s.keys.position(p.EventID, p.RequestID), s.keys.idem(p.EventID, p.IdempotencyKey),
	}
	res, err := assignScript.Run(ctx, s.rdb, keys,
		p.Shard, p.Shards, p.RequestID, p.Now.UnixMilli(), p.TTL.Milliseconds(), useIdem).Slice()
	if err != nil {
		return tier1.Position{}, false, fmt.Errorf("redisstore: assign %s: %w", p.EventID, err)
	}
	switch res[0] {
	case "reused":
		pos, err := decodeIdem(p.EventID, fmt.Sprint(res[1]))
		return pos, true, err
	case "conflict":
		return tier1.Position{}, false, tier1.ErrConflict
	}
	n, ok := res[1].(int64)
	if !ok {
		return tier1.Position{}, false, fmt.Errorf("redisstore: assign %s: unexpected reply %v", p.EventID, res)
	}
	return tier1.Position{
		RequestID: p.RequestID, EventID: p.EventID, Position: n, Shard: p.Shard,
		CreatedAt: time.UnixMilli(p.Now.UnixMilli()).UTC(),
	}, false, nil
}

func decodeIdem(eventID, v string) (tier1.Position, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 4 {
		return tier1.Position{}, fmt.Errorf("redisstore: idempotency record %q malformed", v)
	}
	pos, err1 := strconv.ParseInt(parts[1], 10, 64)
	shard, err2 := strconv.Atoi(parts[2])
	created, err3 := strconv.ParseInt(parts[3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return tier1.Position{}, fmt.Errorf("redisstore: idempotency record %q: %w", v, err)
	}
	return tier1.Position{RequestID: parts[0], EventID: eventID, Position: pos, Shard: shard, CreatedAt: clock.FromUnixMilli(created)}, nil
}

// Position reads one visitor's record.
func (s *Store) Position(ctx context.Context, eventID, requestID string) (tier1.Position, error) {
	cmd := s.rdb.HGetAll(ctx, s.keys.position(eventID, requestID))
	if err := cmd.Err(); err != nil {
		return tier1.Position{}, fmt.Errorf("redisstore: position %s: %w", eventID, err)
	}
	if len(cmd.Val()) == 0 {
		return tier1.Position{}, tier1.ErrNotFound
	}
	var h positionHash
	if err := cmd.Scan(&h); err != nil {
		return tier1.Position{}, fmt.Errorf("redisstore: position %s: %w", eventID, err)
	}
	return tier1.Position{RequestID: requestID, EventID: eventID, Position: h.Position, Shard: h.Shard, CreatedAt: clock.FromUnixMilli(h.Created)}, nil
}

// Advance runs advance.lua (compare-and-set on the serving counter and slot).
func (s *Store) Advance(ctx context.Context, a tier1.AdvanceWrite) error {
	ok, err := advanceScript.Run(ctx, s.rdb, []string{s.keys.event(a.EventID)},
		a.From, a.To, a.Now.UnixMilli(), a.TickSlot, encodeAdvances(a.Advances)).Int()
	if err != nil {
		return fmt.Errorf("redisstore: advance %s: %w", a.EventID, err)
	}
	if ok != 1 {
		return tier1.ErrConflict
	}
	return nil
}

// Events lists the events index, the most recently configured first.
func (s *Store) Events(ctx context.Context, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := s.rdb.ZRevRange(ctx, s.keys.events(), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: events: %w", err)
	}
	return ids, nil
}

// ActiveEvents lists the active-events set, sorted.
func (s *Store) ActiveEvents(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, s.keys.activeEvents()).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: active events: %w", err)
	}
	sort.Strings(ids)
	return ids, nil
}

func encodeAdvances(as []tier1.Advance) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("%d:%d", a.At.UnixMilli(), a.Admitted)
	}
	return strings.Join(parts, ",")
}

func decodeAdvances(v string) ([]tier1.Advance, error) {
	if v == "" {
		return nil, nil
	}
	var out []tier1.Advance
	for _, p := range strings.Split(v, ",") {
		t, n, ok := strings.Cut(p, ":")
		at, err1 := strconv.ParseInt(t, 10, 64)
		admitted, err2 := strconv.ParseInt(n, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("advance record %q is not ms:admitted", p)
		}
		out = append(out, tier1.Advance{At: clock.FromUnixMilli(at), Admitted: admitted})
	}
	return out, nil
}
