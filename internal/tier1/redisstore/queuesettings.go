package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/services/queue"
)

var _ queue.ConfigStore = (*Store)(nil)

var (
	//go:embed queuesettings.lua
	queueSettingsLua    string
	queueSettingsScript = redis.NewScript(queueSettingsLua)
)

// Tier 2's settings share one hash tag ({#queue}: '#' never occurs in an
// event id), so the script that writes them stays in one Cluster slot.

// queueSettings is a HASH event id -> "threshold:open:version".
func (k keys) queueSettings() string { return k.prefix + "vwr1:{#queue}:settings" }

// queueVersion is a STRING, the store-wide version of queueSettings.
func (k keys) queueVersion() string { return k.prefix + "vwr1:{#queue}:version" }

// QueueSettingsVersion reads the version (0 before any write).
func (s *Store) QueueSettingsVersion(ctx context.Context) (int64, error) {
	v, err := s.rdb.Get(ctx, s.keys.queueVersion()).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: queue settings version: %w", err)
	}
	return v, nil
}

// QueueSettings reads the version and every event's settings in one MULTI.
func (s *Store) QueueSettings(ctx context.Context) (map[string]queue.EventSettings, int64, error) {
	var v *redis.StringCmd
	var all *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		v = p.Get(ctx, s.keys.queueVersion())
		all = p.HGetAll(ctx, s.keys.queueSettings())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("redisstore: queue settings: %w", err)
	}
	var version int64
	if v.Err() == nil {
		if version, err = v.Int64(); err != nil {
			return nil, 0, fmt.Errorf("redisstore: queue settings version: %w", err)
		}
	}
	out := make(map[string]queue.EventSettings, len(all.Val()))
	for ev, raw := range all.Val() {
		es, err := parseQueueSettings(raw)
		if err != nil {
			return nil, 0, fmt.Errorf("redisstore: queue settings of %s: %w", ev, err)
		}
		out[ev] = es
	}
	return out, version, nil
}

// PutQueueSettings runs queuesettings.lua.
func (s *Store) PutQueueSettings(ctx context.Context, eventID string, es queue.EventSettings) (queue.EventSettings, error) {
	raw, err := queueSettingsScript.Run(ctx, s.rdb, []string{s.keys.queueSettings(), s.keys.queueVersion()},
		eventID, es.Threshold, flag(es.Open)).Text()
	if err != nil {
		return queue.EventSettings{}, fmt.Errorf("redisstore: put queue settings %s: %w", eventID, err)
	}
	return parseQueueSettings(raw)
}

func parseQueueSettings(raw string) (queue.EventSettings, error) {
	parts := strings.Split(raw, ":")
	if len(parts) != 3 {
		return queue.EventSettings{}, fmt.Errorf("malformed settings %q", raw)
	}
	th, err1 := strconv.ParseInt(parts[0], 10, 64)
	v, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil || (parts[1] != "0" && parts[1] != "1") {
		return queue.EventSettings{}, fmt.Errorf("malformed settings %q", raw)
	}
	return queue.EventSettings{Threshold: th, Open: parts[1] == "1", Version: v}, nil
}
