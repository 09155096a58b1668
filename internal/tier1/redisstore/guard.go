package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/tier1"
)

var (
	//go:embed spend.lua
	spendLua string
	//go:embed count.lua
	countLua string

	spendScript = redis.NewScript(spendLua)
	countScript = redis.NewScript(countLua)
)

var _ tier1.GuardStore = (*Store)(nil)

// ttlMillis is how long a record that expires at t has from now, at least
// one millisecond (PX refuses 0).
func ttlMillis(t, now time.Time) int64 { return max(t.Sub(now).Milliseconds(), 1) }

// SpendSolution runs spend.lua: one key per spent challenge, expiring with it.
func (s *Store) SpendSolution(ctx context.Context, sol tier1.Solution) (tier1.Spend, error) {
	kh := sol.KeyHash
	if kh == "" {
		kh = "-"
	}
	write := kh
	if sol.Unclaimed {
		write = "-"
	}
	res, err := spendScript.Run(ctx, s.rdb, []string{s.keys.spent(sol.EventID, sol.Challenge)},
		kh, ttlMillis(sol.Expires, sol.Now), write).Text()
	if err != nil {
		return 0, fmt.Errorf("redisstore: spend solution %s: %w", sol.EventID, err)
	}
	switch res {
	case "first":
		return tier1.SpendFirst, nil
	case "retry":
		return tier1.SpendRetry, nil
	case "replayed":
		return tier1.SpendReplayed, nil
	}
	return 0, fmt.Errorf("redisstore: spend solution %s: unexpected reply %q", sol.EventID, res)
}

// ClaimSolution writes the key hash into an existing record, keeping its
// expiry; a record that is gone stays gone.
func (s *Store) ClaimSolution(ctx context.Context, sol tier1.Solution) error {
	if sol.KeyHash == "" {
		return nil
	}
	err := s.rdb.SetArgs(ctx, s.keys.spent(sol.EventID, sol.Challenge), sol.KeyHash, redis.SetArgs{Mode: "XX", KeepTTL: true}).Err()
	if err != nil && err != redis.Nil {
		return fmt.Errorf("redisstore: claim solution %s: %w", sol.EventID, err)
	}
	return nil
}

// CountArrival runs count.lua: one counter per client key, event and window.
func (s *Store) CountArrival(ctx context.Context, a tier1.ArrivalCount) (int64, bool, error) {
	res, err := countScript.Run(ctx, s.rdb, []string{s.keys.arrivals(a.EventID, a.Client, a.Window)},
		a.Limit, ttlMillis(a.Expires, a.Now)).Int64Slice()
	if err != nil {
		return 0, false, fmt.Errorf("redisstore: count arrival %s: %w", a.EventID, err)
	}
	if len(res) != 2 {
		return 0, false, fmt.Errorf("redisstore: count arrival %s: unexpected reply %v", a.EventID, res)
	}
	return res[1], res[0] == 1, nil
}
