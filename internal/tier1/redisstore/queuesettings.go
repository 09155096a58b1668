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

	"github.com/vwr-go/vwr/services/queue"
)

var (
	_ queue.ConfigStore = (*Store)(nil)
	_ queue.Ledger      = (*Store)(nil)
)

var (
	//go:embed queuesettings.lua
	queueSettingsLua    string
	queueSettingsScript = redis.NewScript(queueSettingsLua)
	//go:embed queueledger.lua
	queueLedgerLua    string
	queueLedgerScript = redis.NewScript(queueLedgerLua)
)

// Tier 2's settings share one hash tag ({#queue}: '#' never occurs in an
// event id), so the script that writes them stays in one Cluster slot.

// queueSettings is a HASH event id -> "threshold:open:version:epoch".
func (k keys) queueSettings() string { return k.prefix + "vwr1:{#queue}:settings" }

// queueVersion is a STRING, the store-wide version of queueSettings.
func (k keys) queueVersion() string { return k.prefix + "vwr1:{#queue}:version" }

// queueGeneration is a STRING, a random id written with the first setting.
func (k keys) queueGeneration() string { return k.prefix + "vwr1:{#queue}:generation" }

// queueLedger is a HASH user id -> served value: one event's Tier 2 ledger,
// in the event's own slot.
func (k keys) queueLedger(ev string) string { return k.tag(ev) + ":t2ledger" }

// QueueSettingsVersion reads the version and generation (zero before any
// write) in one MGET: both keys share the {#queue} slot.
func (s *Store) QueueSettingsVersion(ctx context.Context) (queue.SettingsVersion, error) {
	vals, err := s.rdb.MGet(ctx, s.keys.queueVersion(), s.keys.queueGeneration()).Result()
	if err != nil {
		return queue.SettingsVersion{}, fmt.Errorf("redisstore: queue settings version: %w", err)
	}
	return parseSettingsVersion(vals[0], vals[1])
}

func parseSettingsVersion(n, gen any) (queue.SettingsVersion, error) {
	var v queue.SettingsVersion
	if s, ok := n.(string); ok {
		var err error
		if v.N, err = strconv.ParseInt(s, 10, 64); err != nil {
			return queue.SettingsVersion{}, fmt.Errorf("redisstore: queue settings version %q: %w", s, err)
		}
	}
	v.Generation, _ = gen.(string)
	return v, nil
}

// QueueSettings reads the version and every event's settings in one MULTI.
func (s *Store) QueueSettings(ctx context.Context) (map[string]queue.EventSettings, queue.SettingsVersion, error) {
	var v *redis.SliceCmd
	var all *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		v = p.MGet(ctx, s.keys.queueVersion(), s.keys.queueGeneration())
		all = p.HGetAll(ctx, s.keys.queueSettings())
		return nil
	})
	if err != nil {
		return nil, queue.SettingsVersion{}, fmt.Errorf("redisstore: queue settings: %w", err)
	}
	version, err := parseSettingsVersion(v.Val()[0], v.Val()[1])
	if err != nil {
		return nil, queue.SettingsVersion{}, err
	}
	out := make(map[string]queue.EventSettings, len(all.Val()))
	for ev, raw := range all.Val() {
		es, err := parseQueueSettings(raw)
		if err != nil {
			return nil, queue.SettingsVersion{}, fmt.Errorf("redisstore: queue settings of %s: %w", ev, err)
		}
		out[ev] = es
	}
	return out, version, nil
}

// runSettings runs queuesettings.lua in one of its modes; "" means the
// mode's condition left the event alone.
func (s *Store) runSettings(ctx context.Context, eventID, mode string, es queue.EventSettings) (string, error) {
	return queueSettingsScript.Run(ctx, s.rdb, []string{s.keys.queueSettings(), s.keys.queueVersion(), s.keys.queueGeneration()},
		eventID, mode, es.Threshold, flag(es.Open), es.Epoch, rand.Text()).Text()
}

// PutQueueSettings runs queuesettings.lua ('put').
func (s *Store) PutQueueSettings(ctx context.Context, eventID string, es queue.EventSettings) (queue.EventSettings, error) {
	raw, err := s.runSettings(ctx, eventID, "put", es)
	if err != nil {
		return queue.EventSettings{}, fmt.Errorf("redisstore: put queue settings %s: %w", eventID, err)
	}
	return parseQueueSettings(raw)
}

// PutQueueEpoch runs queuesettings.lua ('epoch').
func (s *Store) PutQueueEpoch(ctx context.Context, eventID, epoch string) (queue.EventSettings, bool, error) {
	raw, err := s.runSettings(ctx, eventID, "epoch", queue.EventSettings{Epoch: epoch})
	if err != nil {
		return queue.EventSettings{}, false, fmt.Errorf("redisstore: put queue epoch %s: %w", eventID, err)
	}
	if raw == "" {
		return queue.EventSettings{}, false, nil
	}
	es, err := parseQueueSettings(raw)
	return es, err == nil, err
}

// RestoreQueueSettings runs queuesettings.lua ('restore') for each event.
func (s *Store) RestoreQueueSettings(ctx context.Context, all map[string]queue.EventSettings) (int, error) {
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
func parseQueueSettings(raw string) (queue.EventSettings, error) {
	parts := strings.SplitN(raw, ":", 4)
	if len(parts) < 3 {
		return queue.EventSettings{}, fmt.Errorf("malformed settings %q", raw)
	}
	th, err1 := strconv.ParseInt(parts[0], 10, 64)
	v, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil || (parts[1] != "0" && parts[1] != "1") {
		return queue.EventSettings{}, fmt.Errorf("malformed settings %q", raw)
	}
	es := queue.EventSettings{Threshold: th, Open: parts[1] == "1", Version: v}
	if len(parts) == 4 {
		es.Epoch = parts[3]
	}
	return es, nil
}

// ledgerPage is how many users one QueueLedger page asks HSCAN for.
const ledgerPage = 1000

// ledgerAppendChunk bounds the entries one queueledger.lua call carries.
const ledgerAppendChunk = 500

// AppendQueueLedger runs queueledger.lua over the entries, in chunks; the
// ledger expires queue.ServedRetention after the last append.
func (s *Store) AppendQueueLedger(ctx context.Context, eventID string, entries []queue.Served, _ time.Time) error {
	for len(entries) > 0 {
		part := entries[:min(len(entries), ledgerAppendChunk)]
		entries = entries[len(part):]
		args := make([]any, 0, 1+2*len(part))
		args = append(args, queue.ServedRetention.Milliseconds())
		for _, e := range part {
			args = append(args, e.UserID, e.Value())
		}
		if err := queueLedgerScript.Run(ctx, s.rdb, []string{s.keys.queueLedger(eventID)}, args...).Err(); err != nil {
			return fmt.Errorf("redisstore: append queue ledger %s: %w", eventID, err)
		}
	}
	return nil
}

// QueueLedger reads one HSCAN page of the event's ledger; the cursor is
// HSCAN's. The hash holds each user's latest entry, so the order of pages
// does not matter, and a user HSCAN returns twice has the same entry.
func (s *Store) QueueLedger(ctx context.Context, eventID, cursor string) ([]queue.Served, string, error) {
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
	out := make([]queue.Served, 0, len(kvs)/2)
	for i := 0; i+1 < len(kvs); i += 2 {
		e, err := queue.ParseServed(kvs[i], kvs[i+1])
		if err != nil {
			return nil, "", fmt.Errorf("redisstore: queue ledger %s: %w", eventID, err)
		}
		out = append(out, e)
	}
	if next == 0 {
		return out, "", nil
	}
	return out, strconv.FormatUint(next, 10), nil
}
