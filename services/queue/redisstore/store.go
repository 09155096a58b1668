// Package redisstore keeps the Tier 2 queue in Redis: one event's line,
// active set, heartbeats and counters under the hash tag {eventID}, changed
// only by the embedded Lua scripts (one atomic step each), so that it runs
// unchanged on a single redis-server, a Redis Cluster and miniredis.
// docs/tier2-store.md describes the key layout and the algorithms.
package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vwr-go/vwr/internal/clock"
	"github.com/vwr-go/vwr/services/queue"
)

var _ queue.Store = (*Store)(nil)

// Options tune a Store.
type Options struct {
	// Prefix is prepended to every key. It lets several deployments (or
	// parallel tests) share one Redis. It must not contain '{' or '}', which
	// would break the per-event hash tag.
	Prefix string
}

// Store is the Redis implementation of queue.Store. It is safe for
// concurrent use.
type Store struct {
	rdb redis.UniversalClient
	k   keys
	// afterSREM, when set by a test, runs inside Retire between the SREM and
	// the re-check, to replay the race with a concurrent join.
	afterSREM func()
}

// New returns a Store over rdb (a *redis.Client, *redis.ClusterClient or a
// client of miniredis). It panics on a Prefix with braces: that is a wiring
// bug, not a runtime condition.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if strings.ContainsAny(opts.Prefix, "{}") {
		panic("redisstore: Options.Prefix must not contain braces")
	}
	return &Store{rdb: rdb, k: keys{prefix: opts.Prefix}}
}

// tombstoneTTL bounds how long a retired tombstone nobody clears is kept. A
// check clears it once it has relisted the event; it only has to outlive a
// check that read "not listed, no tombstone" before the retire began and
// whose relisted.lua comes after it (it must find the tombstone and leave
// the event unmarked), which the client's timeouts bound.
const tombstoneTTL = 10 * time.Minute

// Load puts every script into Redis' script cache (on every master of a
// Cluster), so that the first calls are already single EVALSHA round trips.
// Calling it is optional: a NOSCRIPT reply is retried once with EVAL.
func (s *Store) Load(ctx context.Context) error {
	for _, sc := range allScripts {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("redisstore: load scripts: %w", err)
		}
	}
	return nil
}

func ms(t time.Time) int64        { return t.UnixMilli() }
func msDur(d time.Duration) int64 { return d.Milliseconds() }
func window() int64               { return msDur(queue.RateWindow) }
func retain() int64               { return msDur(queue.ServedRetention) }

// noLimit stands for "no idle limit": a span no slot reaches.
const noLimit = 100 * 365 * 24 * time.Hour

// limit is d in ms, or noLimit's when d is not positive (the slot's end
// alone bounds it).
func limit(d time.Duration) int64 {
	if d <= 0 {
		d = noLimit
	}
	return msDur(d)
}

// kind is how the scripts tell a Tier 1 pass ('p') from a header identity ('h').
func kind(pass bool) string {
	if pass {
		return "p"
	}
	return "h"
}
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
func isNoScript(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") }
func wrap(op, ev string, err error) error {
	return fmt.Errorf("redisstore: %s %s: %w", op, ev, err)
}

// Check runs check.lua: one round trip to the event's node. Only when the
// script finds the event unlisted (its first waiter since a retire or a
// loss) does it take two more: the SADD into the active-events set, then
// relisted.lua, which marks the event listed unless a retire began since.
// Until the mark is set every other check lists the event too, so none
// returns with its user queued in an event the worker does not visit.
func (s *Store) Check(ctx context.Context, in queue.CheckInput) (queue.Snapshot, error) {
	if in.Score < 0 || in.Score > queue.MaxLineBase {
		return queue.Snapshot{}, wrap("check", in.EventID, fmt.Errorf("line base %d outside 0…%d", in.Score, queue.MaxLineBase))
	}
	reply, err := s.runCheck(ctx, s.k.eventKeys(in.EventID), s.checkArgs(in))
	if err != nil {
		return queue.Snapshot{}, wrap("check", in.EventID, err)
	}
	snap, relist, first, err := parseCheck(reply)
	if err != nil {
		return queue.Snapshot{}, wrap("check", in.EventID, err)
	}
	// An event listed again, or whose line just formed, may have work for
	// the admission pass: the caller has it visited (no request writes the
	// visit schedule, which lives outside the event's slot).
	snap.Wake = first || relist != ""
	if relist != "" {
		// The script already ran: on error the snapshot says whom it let in.
		if err := s.rdb.SAdd(ctx, s.k.activeEvents(), in.EventID).Err(); err != nil {
			return snap, wrap("check relist", in.EventID, err)
		}
		if err := relistedScript.Run(ctx, s.rdb, []string{s.k.retired(in.EventID), s.k.listed(in.EventID)}, relist).Err(); err != nil {
			return snap, wrap("check relist", in.EventID, err)
		}
	}
	return snap, nil
}

// wake makes each event due for a visit at once (score 0, whatever anyone's
// clock says; ZADD LT, one command for any number of events).
func (s *Store) wake(ctx context.Context, eventIDs []string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	zs := make([]redis.Z, len(eventIDs))
	for i, ev := range eventIDs {
		zs[i] = redis.Z{Score: 0, Member: ev}
	}
	return s.rdb.ZAddLT(ctx, s.k.visits(), zs...).Err()
}

// Wake makes each event due for a visit at once.
func (s *Store) Wake(ctx context.Context, eventIDs []string) error {
	if err := s.wake(ctx, eventIDs); err != nil {
		return wrap("wake", "", err)
	}
	return nil
}

// Enlist puts on the visit schedule, due at once, each of eventIDs that is
// not on it (ZADD NX, one command per loadsChunk events), and returns how
// many it put there: the worker's safety net for an event listed without
// being scheduled (a failed write, or a store from before the schedule).
func (s *Store) Enlist(ctx context.Context, eventIDs []string) (int, error) {
	added := 0
	for start := 0; start < len(eventIDs); start += loadsChunk {
		chunk := eventIDs[start:min(start+loadsChunk, len(eventIDs))]
		zs := make([]redis.Z, len(chunk))
		for i, ev := range chunk {
			zs[i] = redis.Z{Score: 0, Member: ev}
		}
		n, err := s.rdb.ZAddNX(ctx, s.k.visits(), zs...).Result()
		if err != nil {
			return added, wrap("enlist", "", err)
		}
		added += int(n)
	}
	return added, nil
}

// visitsPage is the most due events one DueVisits or DueSweeps call returns.
const visitsPage = 10000

// DueVisits lists the events whose visit is due at now (ZRANGEBYSCORE on
// the schedule), the most overdue first, at most visitsPage of them.
func (s *Store) DueVisits(ctx context.Context, now time.Time) ([]string, error) {
	evs, err := s.rdb.ZRangeByScore(ctx, s.k.visits(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(ms(now), 10), Count: visitsPage}).Result()
	if err != nil {
		return nil, wrap("due", "", err)
	}
	return evs, nil
}

// Schedule sets the event's next visit to visit and, when sweep is not
// zero and the event has no stale sweep scheduled, its first sweep to
// sweep: one pipeline.
func (s *Store) Schedule(ctx context.Context, eventID string, visit, sweep time.Time) error {
	pipe := s.rdb.Pipeline()
	pipe.ZAdd(ctx, s.k.visits(), redis.Z{Score: float64(ms(visit)), Member: eventID})
	if !sweep.IsZero() {
		pipe.ZAddNX(ctx, s.k.sweeps(), redis.Z{Score: float64(ms(sweep)), Member: eventID})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return wrap("schedule", eventID, err)
	}
	return nil
}

// DueSweeps lists the events whose stale sweep is due at now, at most
// visitsPage of them.
func (s *Store) DueSweeps(ctx context.Context, now time.Time) ([]string, error) {
	evs, err := s.rdb.ZRangeByScore(ctx, s.k.sweeps(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(ms(now), 10), Count: visitsPage}).Result()
	if err != nil {
		return nil, wrap("due sweeps", "", err)
	}
	return evs, nil
}

// ScheduleSweep sets the event's next stale sweep to at.
func (s *Store) ScheduleSweep(ctx context.Context, eventID string, at time.Time) error {
	if err := s.rdb.ZAdd(ctx, s.k.sweeps(), redis.Z{Score: float64(ms(at)), Member: eventID}).Err(); err != nil {
		return wrap("schedule sweep", eventID, err)
	}
	return nil
}

// unschedule drops a retired event from the worker's schedules.
func (s *Store) unschedule(ctx context.Context, eventID string) error {
	pipe := s.rdb.Pipeline()
	pipe.ZRem(ctx, s.k.visits(), eventID)
	pipe.ZRem(ctx, s.k.sweeps(), eventID)
	_, err := pipe.Exec(ctx)
	return err
}

// checkArgs is check.lua's ARGV for in.
func (s *Store) checkArgs(in queue.CheckInput) []any {
	var holder int64
	if !in.HolderSlotEnd.IsZero() {
		holder = ms(in.HolderSlotEnd)
	}
	return []any{in.UserID, in.Score, ms(in.Now), msDur(in.ActiveTTL), in.DefaultThreshold, window(), flag(in.FixedThreshold),
		in.Epoch.Known, in.Epoch.Candidate, msDur(in.Epoch.Window), holder, kind(in.Pass), limit(in.Idle), flag(in.Ledger), retain(), flag(in.Renewal), flag(in.BatchBeat), s.k.lineChanges(), in.EventID}
}

// runCheck runs check.lua (EVALSHA, EVAL after NOSCRIPT).
func (s *Store) runCheck(ctx context.Context, keys []string, args []any) ([]any, error) {
	return checkScript.Run(ctx, s.rdb, keys, args...).Slice()
}

// Touch runs touch.lua.
func (s *Store) Touch(ctx context.Context, in queue.TouchInput) (queue.Snapshot, error) {
	reply, err := touchScript.Run(ctx, s.rdb, s.k.eventKeys(in.EventID), in.UserID, ms(in.Now), in.DefaultThreshold, window(), limit(in.Idle), flag(in.Ledger), retain(), flag(in.BatchBeat)).Slice()
	if err != nil {
		return queue.Snapshot{}, wrap("touch", in.EventID, err)
	}
	snap, _, _, err := parseCheck(reply)
	if err != nil {
		return queue.Snapshot{}, wrap("touch", in.EventID, err)
	}
	return snap, nil
}

// Leave runs leave.lua.
func (s *Store) Leave(ctx context.Context, in queue.LeaveInput) (bool, error) {
	n, err := leaveScript.Run(ctx, s.rdb, s.k.eventKeys(in.EventID), in.UserID, kind(in.Pass), flag(in.Ledger), retain(), s.k.lineChanges(), in.EventID).Int64()
	if err != nil {
		return false, wrap("leave", in.EventID, err)
	}
	return n == 1, nil
}

// LineChanges subscribes to the line-changes channel (keys.go), on a
// connection of its own whose socket is watched (watch.go): ready runs once
// the subscription is confirmed, with caughtUp (nil where the socket cannot
// be watched: TLS, or a client other than a Client or ClusterClient), then
// fn for each message an
// admission pass, a leave or a join ahead published (parsePush), until
// ctx is done or the subscription fails (a dropped connection included:
// go-redis would resubscribe silently, and messages sent meanwhile would
// be lost unnoticed, so the caller must hear of it).
func (s *Store) LineChanges(ctx context.Context, ready func(caughtUp func() bool), fn func(queue.LinePush)) error {
	client, last, err := subscriber(ctx, s.rdb, s.k.lineChanges())
	if err != nil {
		return wrap("line changes", "", err)
	}
	if client != s.rdb {
		defer client.Close()
	}
	sub := client.Subscribe(ctx, s.k.lineChanges())
	defer sub.Close()
	// A blocked Receive does not watch ctx: closing the subscription ends it.
	stop := context.AfterFunc(ctx, func() { _ = sub.Close() })
	defer stop()
	if _, err := sub.Receive(ctx); err != nil {
		return wrap("line changes", "", err)
	}
	var caughtUp func() bool
	if last != nil { // nil: a client whose socket is not watched
		if w := last.Load(); w != nil {
			caughtUp = func() bool { return last.Load() == w && w.caughtUp() }
		}
	}
	ready(caughtUp)
	for {
		msg, err := sub.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return wrap("line changes", "", err)
		}
		switch m := msg.(type) {
		case *redis.Message:
			fn(parsePush(m.Payload))
		case *redis.Pong:
		default:
			// A (re)subscription confirmation after a reconnect: what
			// was published meanwhile is lost.
			return wrap("line changes", "", fmt.Errorf("subscription restarted (%T)", msg))
		}
	}
}

// parsePush reads a line-changes message: "<event id>" (admit.lua,
// leave.lua) or "<event id> <change count> <base>" (check.lua's join
// ahead). Anything else names at most an event to read again.
func parsePush(payload string) queue.LinePush {
	ev, rest, found := strings.Cut(payload, " ")
	if !found {
		return queue.LinePush{EventID: ev}
	}
	seqS, baseS, _ := strings.Cut(rest, " ")
	seq, err1 := strconv.ParseInt(seqS, 10, 64)
	base, err2 := strconv.ParseInt(baseS, 10, 64)
	if err1 != nil || err2 != nil || seq <= 0 {
		return queue.LinePush{EventID: ev}
	}
	return queue.LinePush{EventID: ev, Seq: seq, Base: base}
}

// SetThreshold stores the per-event override.
func (s *Store) SetThreshold(ctx context.Context, eventID string, n int64) error {
	if err := s.rdb.Set(ctx, s.k.threshold(eventID), n, 0).Err(); err != nil {
		return wrap("set threshold", eventID, err)
	}
	// A raised threshold frees slots: visit the event at once.
	if err := s.wake(ctx, []string{eventID}); err != nil {
		return wrap("set threshold", eventID, err)
	}
	return nil
}

// Stats runs stats.lua.
func (s *Store) Stats(ctx context.Context, eventID string, now time.Time, defaultThreshold int64) (queue.StoreStats, error) {
	reply, err := statsScript.Run(ctx, s.rdb, s.k.eventKeys(eventID), ms(now), defaultThreshold, window()).Int64Slice()
	if err != nil {
		return queue.StoreStats{}, wrap("stats", eventID, err)
	}
	if len(reply) != 7 {
		return queue.StoreStats{}, wrap("stats", eventID, fmt.Errorf("reply has %d fields, want 7", len(reply)))
	}
	st := queue.StoreStats{QueueSize: reply[0], ActiveCount: reply[1], Threshold: reply[2], AdmittedLastMinute: reply[3]}
	if reply[6] > 0 {
		st.RateSince = clock.FromUnixMilli(reply[6])
	}
	if reply[4] >= 0 {
		st.OldestHeartbeat = clock.FromUnixMilli(reply[4])
	}
	if reply[5] > ms(now) {
		st.RecoveringUntil = clock.FromUnixMilli(reply[5])
	}
	return st, nil
}

// Ranking reads the period's ranking key, best first.
func (s *Store) Ranking(ctx context.Context, period string, now time.Time, limit int) ([]queue.RankEntry, error) {
	if _, ok := rankingPeriods[period]; !ok {
		return nil, fmt.Errorf("redisstore: ranking: unknown period %q", period)
	}
	zs, err := s.rdb.ZRevRangeWithScores(ctx, s.k.ranking(period, now), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, wrap("ranking", period, err)
	}
	out := make([]queue.RankEntry, 0, len(zs))
	for _, z := range zs {
		ev, _ := z.Member.(string)
		out = append(out, queue.RankEntry{EventID: ev, Admissions: int64(z.Score)})
	}
	return out, nil
}

// Listed reads the active-events set.
func (s *Store) Listed(ctx context.Context) ([]string, error) {
	evs, err := s.rdb.SMembers(ctx, s.k.activeEvents()).Result()
	if err != nil {
		return nil, wrap("active events", "", err)
	}
	return evs, nil
}

// ClaimAdmission is SET admission:lock:{E} owner NX PX ttl.
func (s *Store) ClaimAdmission(ctx context.Context, eventID, owner string, ttl time.Duration) (bool, error) {
	err := s.rdb.Do(ctx, "SET", s.k.lock(eventID), owner, "NX", "PX", msDur(ttl)).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, wrap("lock", eventID, err)
	}
	return true, nil
}

// ReleaseAdmission runs release.lua (compare-and-delete) on the lock.
func (s *Store) ReleaseAdmission(ctx context.Context, eventID, owner string) (bool, error) {
	n, err := releaseScript.Run(ctx, s.rdb, []string{s.k.lock(eventID)}, owner).Int64()
	if err != nil {
		return false, wrap("unlock", eventID, err)
	}
	return n == 1, nil
}

// Admit runs admit.lua and then adds the drained admissions to the rankings
// in one pipeline: the ranking keys live outside the event's slot, so no
// script may touch them. A failure of that pipeline loses those ranking
// counts (not any admission) and is reported.
func (s *Store) Admit(ctx context.Context, in queue.AdmitInput) (queue.AdmitResult, error) {
	reply, err := admitScript.Run(ctx, s.rdb, s.k.eventKeys(in.EventID),
		ms(in.Now), msDur(in.ActiveTTL), in.DefaultThreshold, in.Batch, window(), flag(in.FixedThreshold),
		in.Epoch.Known, in.Epoch.Candidate, msDur(in.Epoch.Window), limit(in.ClaimGrace), flag(in.Ledger), retain(),
		s.k.lineChanges(), in.EventID).Slice()
	if err != nil {
		return queue.AdmitResult{}, wrap("admit", in.EventID, err)
	}
	res, pending, err := parseAdmit(reply, in.Now)
	if err != nil {
		return queue.AdmitResult{}, wrap("admit", in.EventID, err)
	}
	if len(pending) > 0 {
		if err := s.addRankings(ctx, in.EventID, pending); err != nil {
			return res, wrap("admit rankings", in.EventID, err)
		}
	}
	return res, nil
}

// addRankings ZINCRBYs each admission into the day, ISO week and month it
// happened in and gives a key its TTL only when it has none (EXPIRE NX).
func (s *Store) addRankings(ctx context.Context, eventID string, pending map[int64]int64) error {
	incr := map[string]int64{}
	ttl := map[string]time.Duration{}
	for sec, n := range pending {
		t := time.Unix(sec, 0).UTC()
		for period, p := range rankingPeriods {
			key := s.k.ranking(period, t)
			incr[key] += n
			ttl[key] = p.ttl
		}
	}
	pipe := s.rdb.Pipeline()
	for key, n := range incr {
		pipe.ZIncrBy(ctx, key, float64(n), eventID)
		pipe.ExpireNX(ctx, key, ttl[key])
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Retire drops an empty event from the active-events set: retire.lua
// ('begin') unmarks it listed and leaves a tombstone in its own slot, then
// the SREM, then retire.lua ('recheck') adds it back if anyone joined
// meanwhile. A join's script runs either before 'begin' (the event is not
// empty: kept), or after it, when it finds the event unlisted and lists it
// again itself (check); so an event with queued users is never left out
// for longer than one retire takes, even when the retiring worker dies
// between its steps.
func (s *Store) Retire(ctx context.Context, eventID string) (bool, error) {
	keys := s.k.eventKeys(eventID)
	keep, err := retireScript.Run(ctx, s.rdb, keys, "begin", msDur(tombstoneTTL), rand.Text()).Int64()
	if err != nil || keep == 1 {
		return false, wrapIf("retire", eventID, err)
	}
	if err := s.rdb.SRem(ctx, s.k.activeEvents(), eventID).Err(); err != nil {
		// Unmarked: the next check lists it again, and the next pass retries.
		return false, wrap("retire", eventID, err)
	}
	// Off the schedules before the recheck: a join since 'begin' is found
	// by it and scheduled again below; a later one schedules the event
	// itself (check: relist).
	if err := s.unschedule(ctx, eventID); err != nil {
		_ = s.readd(context.WithoutCancel(ctx), eventID)
		return false, wrap("retire", eventID, err)
	}
	if s.afterSREM != nil {
		s.afterSREM()
	}
	keep, err = retireScript.Run(ctx, s.rdb, keys, "recheck").Int64()
	if err != nil {
		// Unknown whether anyone is there: put it back, the next pass retries.
		_ = s.readd(context.WithoutCancel(ctx), eventID)
		return false, wrap("retire", eventID, err)
	}
	if keep == 1 {
		if err := s.readd(ctx, eventID); err != nil {
			return false, wrap("retire re-add", eventID, err)
		}
		return false, nil
	}
	return true, nil
}

// readd puts an event a retire took off back into the active events and
// on the worker's schedule, due at once.
func (s *Store) readd(ctx context.Context, eventID string) error {
	if err := s.rdb.SAdd(ctx, s.k.activeEvents(), eventID).Err(); err != nil {
		return err
	}
	return s.wake(ctx, []string{eventID})
}

// wrapIf is wrap, or nil for a nil err.
func wrapIf(op, ev string, err error) error {
	if err == nil {
		return nil
	}
	return wrap(op, ev, err)
}

// Lease runs lease.lua on the duty's lease.
func (s *Store) Lease(ctx context.Context, duty, owner string, ttl time.Duration) (bool, error) {
	n, err := leaseScript.Run(ctx, s.rdb, []string{s.k.lease(duty)}, owner, msDur(ttl)).Int64()
	if err != nil {
		return false, wrap("lease", duty, err)
	}
	return n == 1, nil
}

// ClaimSweep is SET {E}:sweep-due owner NX PX every.
func (s *Store) ClaimSweep(ctx context.Context, eventID, owner string, every time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.k.sweepDue(eventID), owner, every).Result()
	if err != nil {
		return false, wrap("sweep due", eventID, err)
	}
	return ok, nil
}

// sweepPage is how many waiters one cleanup.lua call examines: a page of
// the full sweep, so that no call holds the event's node for long
// (docs/tier2-store.md, "Cost of a sweep").
const sweepPage = 2000

// Sweep sweeps the whole line, a page at a time (cleanup.lua), and
// drops the waiters silent for at least seenTTL. Pages follow the score, so
// admissions popping the head meanwhile skip nobody still there.
func (s *Store) Sweep(ctx context.Context, eventID string, now time.Time, seenTTL time.Duration) (int, error) {
	total, from := 0, "-inf"
	for {
		r, err := cleanupScript.Run(ctx, s.rdb, s.k.eventKeys(eventID), ms(now), msDur(seenTTL), from, sweepPage).Slice()
		if err != nil {
			return total, wrap("cleanup", eventID, err)
		}
		if len(r) != 3 {
			return total, wrap("cleanup", eventID, fmt.Errorf("reply has %d fields, want 3", len(r)))
		}
		removed, err1 := asInt(r[0])
		examined, err2 := asInt(r[1])
		last, ok := r[2].(string)
		if err := errors.Join(err1, err2); err != nil || !ok {
			return total, wrap("cleanup", eventID, fmt.Errorf("reply %v: %v", r, err))
		}
		total += int(removed)
		if examined < sweepPage {
			return total, nil
		}
		from = "(" + last
	}
}

// Epochs sends HGET {E}:epoch id for every event in one pipeline per
// loadsChunk events (one round trip for a single event).
func (s *Store) Epochs(ctx context.Context, eventIDs []string) ([]string, error) {
	out := make([]string, 0, len(eventIDs))
	for start := 0; start < len(eventIDs); start += loadsChunk {
		chunk := eventIDs[start:min(start+loadsChunk, len(eventIDs))]
		cmds := make([]*redis.StringCmd, len(chunk))
		pipe := s.rdb.Pipeline()
		for i, ev := range chunk {
			cmds[i] = pipe.HGet(ctx, s.k.epoch(ev), "id")
		}
		_, _ = pipe.Exec(ctx) // each command's own error is checked below
		for i, ev := range chunk {
			id, err := cmds[i].Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, wrap("epochs", ev, err)
			}
			out = append(out, id)
		}
	}
	return out, nil
}

// replayChunk bounds the entries one replay.lua or logged.lua call carries.
const replayChunk = 500

// Replay runs replay.lua over the entries, replayChunk at a time; only the
// last call carries in.Finish.
func (s *Store) Replay(ctx context.Context, in queue.ReplayInput) (int, error) {
	total, entries := 0, in.Entries
	for first := true; first || len(entries) > 0; first = false {
		part := entries[:min(len(entries), replayChunk)]
		entries = entries[len(part):]
		finish := ""
		if len(entries) == 0 {
			finish = in.Finish
		}
		args := make([]any, 0, 5+2*len(part))
		args = append(args, ms(in.Now), finish, flag(in.Ledger), retain(), msDur(in.RebuildGrace))
		for _, e := range part {
			args = append(args, e.UserID, e.Value())
		}
		n, err := replayScript.Run(ctx, s.rdb, s.k.eventKeys(in.EventID), args...).Int64()
		if err != nil {
			return total, wrap("replay", in.EventID, err)
		}
		total += int(n)
	}
	return total, nil
}

// Logged runs logged.lua over the entries, replayChunk at a time.
func (s *Store) Logged(ctx context.Context, eventID string, entries []queue.Served) error {
	for len(entries) > 0 {
		part := entries[:min(len(entries), replayChunk)]
		entries = entries[len(part):]
		args := make([]any, 0, 2*len(part))
		for _, e := range part {
			args = append(args, e.UserID, e.Value())
		}
		if err := loggedScript.Run(ctx, s.rdb, s.k.eventKeys(eventID), args...).Err(); err != nil {
			return wrap("logged", eventID, err)
		}
	}
	return nil
}

// relogPage is how many served entries one relog.lua call copies (about).
const relogPage = 1000

// Relog runs relog.lua over the event's whole served record, a page at a
// time, then lists the event so that a worker appends what it queued.
func (s *Store) Relog(ctx context.Context, eventID string) (int, error) {
	keys, total := s.k.eventKeys(eventID), 0
	for cursor := "0"; ; {
		reply, err := relogScript.Run(ctx, s.rdb, keys, cursor, relogPage).Slice()
		if err != nil {
			return total, wrap("relog", eventID, err)
		}
		if len(reply) != 2 {
			return total, wrap("relog", eventID, fmt.Errorf("unexpected reply %v", reply))
		}
		cursor = fmt.Sprint(reply[0])
		n, _ := reply[1].(int64)
		total += int(n)
		if cursor == "0" {
			break
		}
	}
	if total > 0 {
		if err := s.readd(ctx, eventID); err != nil {
			return total, wrap("relog", eventID, err)
		}
	}
	return total, nil
}

// Beat writes each event's batch of queued heartbeats (beat.lua, one call
// per event, all in one pipeline: go-redis splits it per node on a Cluster).
func (s *Store) Beat(ctx context.Context, beats map[string]map[string]time.Time) error {
	if len(beats) == 0 {
		return nil
	}
	argsOf := func(ev string) []any {
		args := make([]any, 0, 2*len(beats[ev]))
		for uid, at := range beats[ev] {
			args = append(args, uid, ms(at))
		}
		return args
	}
	pipe := s.rdb.Pipeline()
	cmds := make(map[string]*redis.Cmd, len(beats))
	for ev := range beats {
		cmds[ev] = beatScript.EvalSha(ctx, pipe, []string{s.k.queue(ev)}, argsOf(ev)...)
	}
	_, _ = pipe.Exec(ctx) // each command's own error is checked below
	var errs []error
	for ev, c := range cmds {
		err := c.Err()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			err = beatScript.Run(ctx, s.rdb, []string{s.k.queue(ev)}, argsOf(ev)...).Err()
		}
		if err != nil {
			errs = append(errs, wrap("beat", ev, err))
		}
	}
	return errors.Join(errs...)
}

// LineStates runs lines.lua for every query, in one pipeline per
// loadsChunk events (go-redis splits it per node on a Cluster).
func (s *Store) LineStates(ctx context.Context, qs []queue.LineQuery) ([]queue.LineState, error) {
	out := make([]queue.LineState, 0, len(qs))
	argsOf := func(q queue.LineQuery) []any {
		return []any{q.Since, ms(q.Now), q.DefaultThreshold, flag(q.FixedThreshold), window(), queue.MaxLineChanges}
	}
	for start := 0; start < len(qs); start += loadsChunk {
		chunk := qs[start:min(start+loadsChunk, len(qs))]
		cmds := make([]*redis.Cmd, len(chunk))
		pipe := s.rdb.Pipeline()
		for i, q := range chunk {
			cmds[i] = linesScript.EvalSha(ctx, pipe, s.k.eventKeys(q.EventID), argsOf(q)...)
		}
		_, _ = pipe.Exec(ctx) // each command's own error is checked below
		for i, q := range chunk {
			r, err := cmds[i].Slice()
			if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				r, err = linesScript.Run(ctx, s.rdb, s.k.eventKeys(q.EventID), argsOf(q)...).Slice()
			}
			if err != nil {
				return nil, wrap("lines", q.EventID, err)
			}
			st, err := parseLines(r)
			if err != nil {
				return nil, wrap("lines", q.EventID, err)
			}
			st.EventID = q.EventID
			out = append(out, st)
		}
	}
	return out, nil
}

// parseLines reads lines.lua's reply.
func parseLines(r []any) (queue.LineState, error) {
	if len(r) < 12 {
		return queue.LineState{}, fmt.Errorf("reply has %d fields, want at least 12", len(r))
	}
	var n [10]int64
	for i := range n {
		if i == 8 {
			continue
		}
		v, err := asInt(r[i])
		if err != nil {
			return queue.LineState{}, err
		}
		n[i] = v
	}
	eid, ok := r[8].(string)
	if !ok {
		return queue.LineState{}, fmt.Errorf("epoch is %T, want a string", r[8])
	}
	gen, ok := r[10].(string)
	if !ok {
		return queue.LineState{}, fmt.Errorf("generation is %T, want a string", r[10])
	}
	st := queue.LineState{Seq: n[0], Gap: n[1] == 1, Front: n[2], QueueSize: n[3], ActiveCount: n[4], Threshold: n[5],
		AdmittedLastMinute: n[6], Epoch: queue.EpochState{ID: eid}, Gen: gen}
	if n[7] > 0 {
		st.RateSince = clock.FromUnixMilli(n[7])
	}
	if n[9] > 0 {
		st.Epoch.RecoveringUntil = clock.FromUnixMilli(n[9])
	}
	switch prev, ok := r[11].(string); {
	case !ok:
		return queue.LineState{}, fmt.Errorf("the entry at the cursor is %T, want a string", r[11])
	case prev != "":
		c, err := parseChange(prev)
		if err != nil {
			return queue.LineState{}, err
		}
		st.Prev = &c
	}
	for _, e := range r[12:] {
		raw, ok := e.(string)
		if !ok {
			return queue.LineState{}, fmt.Errorf("change is %T, want a string", e)
		}
		c, err := parseChange(raw)
		if err != nil {
			return queue.LineState{}, err
		}
		st.Changes = append(st.Changes, c)
	}
	return st, nil
}

// parseChange reads one entry of the change log (lib.lua log_change).
func parseChange(raw string) (queue.LineChange, error) {
	if raw == "" {
		return queue.LineChange{}, errors.New("empty change")
	}
	c := queue.LineChange{Kind: raw[0]}
	rest := raw[1:]
	var err error
	switch c.Kind {
	case queue.LineReset:
		return c, nil
	case queue.LineJoined:
		c.Base, err = strconv.ParseInt(rest, 10, 64)
	case queue.LineAdmitted:
		n, base, ok := strings.Cut(rest, ":")
		if !ok {
			return c, fmt.Errorf("change %q: no ':'", raw)
		}
		c.N, err = strconv.ParseInt(n, 10, 64)
		if err == nil {
			c.Base, err = strconv.ParseInt(base, 10, 64)
		}
	case queue.LineLeft, queue.LineSwept:
		base, uid, ok := strings.Cut(rest, ":")
		if !ok {
			return c, fmt.Errorf("change %q: no ':'", raw)
		}
		c.UserID = uid
		c.Base, err = strconv.ParseInt(base, 10, 64)
	default:
		return c, fmt.Errorf("change %q: unknown kind", raw)
	}
	if err != nil {
		return c, fmt.Errorf("change %q: %w", raw, err)
	}
	return c, nil
}

// Ping checks the connection.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return wrap("ping", "", err)
	}
	return nil
}

// QueueScore is the base a queued user sorts by: their Tier 1 position, or
// their arrival ms without one (the line's score without its heartbeat
// tick, see lib.lua). ok is false when the user is not queued. Operators'
// tooling and end-to-end tests use it to check the ordering.
func (s *Store) QueueScore(ctx context.Context, eventID, userID string) (score int64, ok bool, err error) {
	v, err := s.rdb.ZScore(ctx, s.k.queue(eventID), userID).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap("queue score", eventID, err)
	}
	return int64(v) / hbTicks, true, nil
}

// hbTicks is lib.lua's HB_TICKS: a line score is base × hbTicks + tick.
const hbTicks = 1024

// parseCheck reads the reply of check.lua and touch.lua: parseView's,
// whether the call queued the first waiter of an empty line (its 14th
// field), and a queued user's place in the change log (15th and 16th).
func parseCheck(r []any) (queue.Snapshot, string, bool, error) {
	if len(r) != 16 {
		return queue.Snapshot{}, "", false, fmt.Errorf("reply has %d fields, want 16", len(r))
	}
	var n [3]int64
	for i := range n {
		v, err := asInt(r[13+i])
		if err != nil {
			return queue.Snapshot{}, "", false, err
		}
		n[i] = v
	}
	snap, relist, err := parseView(r[:13])
	snap.LineSeq, snap.LineBase = n[1], n[2]
	return snap, relist, n[0] == 1, err
}

// parseView reads the reply of check.lua and touch.lua: the snapshot and
// the relist token ("" for none).
func parseView(r []any) (queue.Snapshot, string, error) {
	if len(r) != 13 {
		return queue.Snapshot{}, "", fmt.Errorf("reply has %d fields, want 13", len(r))
	}
	status, ok1 := r[0].(string)
	relist, ok2 := r[8].(string)
	eid, ok3 := r[9].(string)
	done, ok4 := r[12].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return queue.Snapshot{}, "", fmt.Errorf("status is %T, relist %T, epoch %T and done %T, want strings", r[0], r[8], r[9], r[12])
	}
	untl, err := asInt(r[10])
	if err != nil {
		return queue.Snapshot{}, "", err
	}
	rateSince, err := asInt(r[11])
	if err != nil {
		return queue.Snapshot{}, "", err
	}
	var n [7]int64
	for i := range n {
		v, err := asInt(r[i+1])
		if err != nil {
			return queue.Snapshot{}, "", err
		}
		n[i] = v
	}
	snap := queue.Snapshot{
		Status:             queue.Status(status),
		Activated:          n[0] == 1,
		Rank:               n[1],
		QueueSize:          n[2],
		ActiveCount:        n[3],
		Threshold:          n[4],
		AdmittedLastMinute: n[5],
	}
	if n[6] > 0 {
		snap.ExpiresAt = clock.FromUnixMilli(n[6])
	}
	if rateSince > 0 {
		snap.RateSince = clock.FromUnixMilli(rateSince)
	}
	snap.Epoch.ID = eid
	if untl > 0 {
		snap.Epoch.RecoveringUntil = clock.FromUnixMilli(untl)
	}
	snap.Done = done
	return snap, relist, nil
}

// parseAdmit reads the reply of admit.lua.
func parseAdmit(r []any, now time.Time) (queue.AdmitResult, map[int64]int64, error) {
	if len(r) < 10 {
		return queue.AdmitResult{}, nil, fmt.Errorf("reply has %d fields, want at least 10", len(r))
	}
	var head [4]int64
	for i := range head {
		v, err := asInt(r[i])
		if err != nil {
			return queue.AdmitResult{}, nil, err
		}
		head[i] = v
	}
	n := int(head[3])
	eid, ok1 := r[4].(string)
	untl, err1 := asInt(r[5])
	replay, err2 := asInt(r[6])
	nextFree, err3 := asInt(r[7])
	kinds, ok2 := r[8].(string)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil || len(kinds) != n {
		return queue.AdmitResult{}, nil, fmt.Errorf("malformed admit head %v", r[:9])
	}
	rest := r[9:]
	if n+1 > len(rest) {
		return queue.AdmitResult{}, nil, fmt.Errorf("malformed admit reply of %d fields", len(r))
	}
	res := queue.AdmitResult{ExpiresAt: clock.FromUnixMilli(head[0]), QueueSize: head[1], ActiveCount: head[2], Replay: replay == 1}
	res.Epoch.ID = eid
	if nextFree > 0 {
		res.NextFree = clock.FromUnixMilli(nextFree)
	}
	if untl > ms(now) {
		res.Epoch.RecoveringUntil = clock.FromUnixMilli(untl)
	}
	for i, v := range rest[:n] {
		uid, ok := v.(string)
		if !ok {
			return queue.AdmitResult{}, nil, fmt.Errorf("admitted uid is %T", v)
		}
		res.Admitted = append(res.Admitted, uid)
		if kinds[i] == 'h' {
			res.Header = append(res.Header, uid)
		}
	}
	m, err := asInt(rest[n])
	rest = rest[n+1:]
	if err != nil || m < 0 || int(2*m) > len(rest) || (len(rest)-int(2*m))%2 != 0 {
		return queue.AdmitResult{}, nil, fmt.Errorf("malformed admit reply of %d fields", len(r))
	}
	for i := 0; i < int(2*m); i += 2 {
		uid, ok1 := rest[i].(string)
		val, ok2 := rest[i+1].(string)
		if !ok1 || !ok2 {
			return queue.AdmitResult{}, nil, fmt.Errorf("unlogged entry is %T %T", rest[i], rest[i+1])
		}
		e, err := queue.ParseServed(uid, val)
		if err != nil {
			return queue.AdmitResult{}, nil, err
		}
		res.Unlogged = append(res.Unlogged, e)
	}
	rest = rest[2*m:]
	pending := map[int64]int64{}
	for i := 0; i < len(rest); i += 2 {
		sec, err1 := asInt(rest[i])
		cnt, err2 := asInt(rest[i+1])
		if err := errors.Join(err1, err2); err != nil {
			return queue.AdmitResult{}, nil, err
		}
		pending[sec] += cnt
	}
	return res, pending, nil
}

// asInt reads a reply element that is an integer or its decimal string
// (HGETALL answers strings).
func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reply element %q is not an integer", x)
		}
		return n, nil
	default:
		return 0, fmt.Errorf("reply element is %T, want an integer", v)
	}
}

// loadsChunk is the most events one pipelined read or ZADD carries.
const loadsChunk = 2000

// Time is the Redis server's clock (TIME): the one reference every instance
// measures its clock offset against (internal/clock.Offset).
func (s *Store) Time(ctx context.Context) (time.Time, error) {
	t, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, wrap("time", "", err)
	}
	return t.UTC(), nil
}
