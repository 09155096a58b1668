// Package redisstore keeps event settings and the Tier 2 ledger in Redis
// (eventsettings.Store and eventsettings.Ledger), beside Tier 1's own keys
// when Tier 1 runs on Redis. It runs unchanged on one redis-server, a Redis
// Cluster and miniredis: the settings share one hash tag and each ledger
// lives in its event's slot.
package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/eventsettings"
)

var _ eventsettings.StoreLedger = (*Store)(nil)

var (
	//go:embed settings.lua
	settingsLua    string
	settingsScript = redis.NewScript(settingsLua)
	//go:embed ledger.lua
	ledgerLua    string
	ledgerScript = redis.NewScript(ledgerLua)
)

// Store is the Redis adapter. It is safe for concurrent use.
type Store struct {
	rdb  redis.UniversalClient
	keys keys
}

// New returns a Store over rdb (a *redis.Client, *redis.ClusterClient or a
// client of miniredis); prefix, "" in production, is prepended to every key
// so that tests may share one Redis. It panics on a prefix with braces,
// which would break the hash tags: that is a wiring bug.
func New(rdb redis.UniversalClient, prefix string) *Store {
	if strings.ContainsAny(prefix, "{}") {
		panic("redisstore: the prefix must not contain braces")
	}
	return &Store{rdb: rdb, keys: keys{prefix: prefix}}
}

// keys names every key of the store. The names are those Tier 1's Redis
// store used when it held the settings, so a deployment keeps its data.
type keys struct{ prefix string }

// The settings share one hash tag ({#queue}: '#' never occurs in an event
// id), so the script that writes them stays in one Cluster slot.

// queueSettings is a HASH event id -> "threshold:open:version:epoch".
func (k keys) queueSettings() string { return k.prefix + "vwr1:{#queue}:settings" }

// queueVersion is a STRING, the store-wide version of queueSettings.
func (k keys) queueVersion() string { return k.prefix + "vwr1:{#queue}:version" }

// queueGeneration is a STRING, a random id written with the first setting.
func (k keys) queueGeneration() string { return k.prefix + "vwr1:{#queue}:generation" }

// queueLedger is a HASH user id -> served value: one event's Tier 2 ledger,
// in the event's own slot (Tier 1's keys of the event share it).
func (k keys) queueLedger(ev string) string { return k.prefix + "vwr1:{" + ev + "}:t2ledger" }

// QueueSettingsVersion reads the version and generation (zero before any
// write) in one MGET: both keys share the {#queue} slot.
func (s *Store) QueueSettingsVersion(ctx context.Context) (eventsettings.Version, error) {
	vals, err := s.rdb.MGet(ctx, s.keys.queueVersion(), s.keys.queueGeneration()).Result()
	if err != nil {
		return eventsettings.Version{}, fmt.Errorf("redisstore: queue settings version: %w", err)
	}
	return parseSettingsVersion(vals[0], vals[1])
}

func parseSettingsVersion(n, gen any) (eventsettings.Version, error) {
	var v eventsettings.Version
	if s, ok := n.(string); ok {
		var err error
		if v.N, err = strconv.ParseInt(s, 10, 64); err != nil {
			return eventsettings.Version{}, fmt.Errorf("redisstore: queue settings version %q: %w", s, err)
		}
	}
	v.Generation, _ = gen.(string)
	return v, nil
}

// QueueSettings reads the version and every event's settings in one MULTI.
func (s *Store) QueueSettings(ctx context.Context) (map[string]eventsettings.Settings, eventsettings.Version, error) {
	var v *redis.SliceCmd
	var all *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		v = p.MGet(ctx, s.keys.queueVersion(), s.keys.queueGeneration())
		all = p.HGetAll(ctx, s.keys.queueSettings())
		return nil
	})
	if err != nil {
		return nil, eventsettings.Version{}, fmt.Errorf("redisstore: queue settings: %w", err)
	}
	version, err := parseSettingsVersion(v.Val()[0], v.Val()[1])
	if err != nil {
		return nil, eventsettings.Version{}, err
	}
	out := make(map[string]eventsettings.Settings, len(all.Val()))
	for ev, raw := range all.Val() {
		es, err := parseQueueSettings(raw)
		if err != nil {
			return nil, eventsettings.Version{}, fmt.Errorf("redisstore: queue settings of %s: %w", ev, err)
		}
		out[ev] = es
	}
	return out, version, nil
}

// runSettings runs settings.lua in one of its modes; "" means the
// mode's condition left the event alone.
func (s *Store) runSettings(ctx context.Context, eventID, mode string, es eventsettings.Settings) (string, error) {
	return settingsScript.Run(ctx, s.rdb, []string{s.keys.queueSettings(), s.keys.queueVersion(), s.keys.queueGeneration()},
		eventID, mode, es.Threshold, open(es.Open), es.Epoch, rand.Text()).Text()
}

// PutQueueSettings runs settings.lua ('put').
func (s *Store) PutQueueSettings(ctx context.Context, eventID string, es eventsettings.Settings) (eventsettings.Settings, error) {
	raw, err := s.runSettings(ctx, eventID, "put", es)
	if err != nil {
		return eventsettings.Settings{}, fmt.Errorf("redisstore: put queue settings %s: %w", eventID, err)
	}
	return parseQueueSettings(raw)
}

// PutQueueEpoch runs settings.lua ('epoch').
func (s *Store) PutQueueEpoch(ctx context.Context, eventID, epoch string) (eventsettings.Settings, bool, error) {
	raw, err := s.runSettings(ctx, eventID, "epoch", eventsettings.Settings{Epoch: epoch})
	if err != nil {
		return eventsettings.Settings{}, false, fmt.Errorf("redisstore: put queue epoch %s: %w", eventID, err)
	}
	if raw == "" {
		return eventsettings.Settings{}, false, nil
	}
	es, err := parseQueueSettings(raw)
	return es, err == nil, err
}

// RestoreQueueSettings runs settings.lua ('restore') for each event.
func (s *Store) RestoreQueueSettings(ctx context.Context, all map[string]eventsettings.Settings) (int, error) {
	n := 0
	for ev, es := range all {
		raw, err := s.runSettings(ctx, ev, "restore", es)
		if err != nil {
			return n, fmt.Errorf("redisstore: restore queue settings %s: %w", ev, err)
		}
		if raw != "" {
			n++
		}
	}
	return n, nil
}

// parseQueueSettings reads "threshold:open:version:epoch" (or the
// three-part form written before epochs were kept).
func parseQueueSettings(raw string) (eventsettings.Settings, error) {
	parts := strings.SplitN(raw, ":", 4)
	if len(parts) < 3 {
		return eventsettings.Settings{}, fmt.Errorf("malformed settings %q", raw)
	}
	th, err1 := strconv.ParseInt(parts[0], 10, 64)
	v, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil || (parts[1] != "0" && parts[1] != "1") {
		return eventsettings.Settings{}, fmt.Errorf("malformed settings %q", raw)
	}
	es := eventsettings.Settings{Threshold: th, Open: parts[1] == "1", Version: v}
	if len(parts) == 4 {
		es.Epoch = parts[3]
	}
	return es, nil
}

// ledgerPage is how many users one QueueLedger page asks HSCAN for.
const ledgerPage = 1000

// ledgerAppendChunk bounds the entries one ledger.lua call carries.
const ledgerAppendChunk = 500

// AppendQueueLedger runs ledger.lua over the entries, in chunks; the
// ledger expires eventsettings.LedgerRetention after the last append.
func (s *Store) AppendQueueLedger(ctx context.Context, eventID string, entries []eventsettings.LedgerEntry, _ time.Time) error {
	for len(entries) > 0 {
		part := entries[:min(len(entries), ledgerAppendChunk)]
		entries = entries[len(part):]
		args := make([]any, 0, 1+2*len(part))
		args = append(args, eventsettings.LedgerRetention.Milliseconds())
		for _, e := range part {
			args = append(args, e.UserID, e.Value)
		}
		if err := ledgerScript.Run(ctx, s.rdb, []string{s.keys.queueLedger(eventID)}, args...).Err(); err != nil {
			return fmt.Errorf("redisstore: append queue ledger %s: %w", eventID, err)
		}
	}
	return nil
}

// QueueLedger reads one HSCAN page of the event's ledger; the cursor is
// HSCAN's. The hash holds each user's latest entry, so the order of pages
// does not matter, and a user HSCAN returns twice has the same entry.
func (s *Store) QueueLedger(ctx context.Context, eventID, cursor string) ([]eventsettings.LedgerEntry, string, error) {
	var c uint64
	if cursor != "" {
		var err error
		if c, err = strconv.ParseUint(cursor, 10, 64); err != nil {
			return nil, "", fmt.Errorf("redisstore: queue ledger %s: bad cursor %q", eventID, cursor)
		}
	}
	kvs, next, err := s.rdb.HScan(ctx, s.keys.queueLedger(eventID), c, "", ledgerPage).Result()
	if err != nil {
		return nil, "", fmt.Errorf("redisstore: queue ledger %s: %w", eventID, err)
	}
	out := make([]eventsettings.LedgerEntry, 0, len(kvs)/2)
	for i := 0; i+1 < len(kvs); i += 2 {
		out = append(out, eventsettings.LedgerEntry{UserID: kvs[i], Value: kvs[i+1]})
	}
	if next == 0 {
		return out, "", nil
	}
	return out, strconv.FormatUint(next, 10), nil
}

func open(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
