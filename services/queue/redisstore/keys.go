package redisstore

import (
	"fmt"
	"time"
)

// keys builds every Redis key the Tier 2 store uses. One event's keys share
// the hash tag {eventID}, so each per-event script touches a single Cluster
// slot. The active-events set, the rankings and nothing else live outside an
// event's slot, and no script touches them; a check writes the active-events
// set only when the event is not listed ({E}:listed), so a poll touches one
// node. Keys are built from validated
// event ids only: a user id (any printable text) is only ever a member or a
// script argument (hostile_test.go).
type keys struct {
	prefix string // empty in production; tests use a unique one
}

// Per-event keys. The comment names the type and what the score means.
func (k keys) tag(ev string) string        { return k.prefix + "{" + ev + "}" }
func (k keys) queue(ev string) string      { return k.tag(ev) + ":queue" }      // ZSET uid -> base (Tier 1 position or arrival ms) × 1024 + heartbeat tick
func (k keys) active(ev string) string     { return k.tag(ev) + ":active" }     // ZSET uid -> free-at ms: slot end, or sooner when the holder stops showing up
func (k keys) swept(ev string) string      { return k.tag(ev) + ":swept" }      // HASH what the last stale sweep found: oldest (ms), scan
func (k keys) threshold(ev string) string  { return k.tag(ev) + ":threshold" }  // STRING per-event override
func (k keys) admissions(ev string) string { return k.tag(ev) + ":admissions" } // ZSET "ms:uid" -> admission ms, trimmed to the rate window
func (k keys) rankPending(ev string) string {
	return k.tag(ev) + ":rank-pending" // HASH unix second -> admissions not yet added to the rankings
}
func (k keys) epoch(ev string) string {
	return k.tag(ev) + ":epoch" // HASH id, born ms, until ms: loss detection and the recovery window
}
func (k keys) served(ev string) string {
	return k.tag(ev) + ":served" // HASH uid -> queue.Served value: whom the event let in, and who left
}
func (k keys) unlogged(ev string) string {
	return k.tag(ev) + ":unlogged" // HASH uid -> queue.Served value not yet appended to the durable ledger
}
func (k keys) header(ev string) string {
	return k.tag(ev) + ":header" // SET waiters named by a trusted header rather than a Tier 1 pass
}
func (k keys) retired(ev string) string {
	return k.tag(ev) + ":retired" // STRING tombstone: the worker is dropping or dropped the event from the active set
}
func (k keys) listed(ev string) string {
	return k.tag(ev) + ":listed" // STRING "1": the event is in the active set, so a check need not list it
}

func (k keys) changes(ev string) string {
	return k.tag(ev) + ":changes" // LIST the line's change log, newest last (lib.lua log_change)
}
func (k keys) line(ev string) string {
	return k.tag(ev) + ":line" // HASH seq: changes logged; front: highest base admitted
}

// lineChanges is the Pub/Sub channel admit.lua and leave.lua publish an
// event id on when they change its line, and check.lua a join ahead of
// someone (a channel, not a key: a plain PUBLISH reaches every node of a
// Cluster, so it needs no slot).
func (k keys) lineChanges() string { return k.prefix + "queue:line-changes" }

// sweepDue marks the event's stale sweep as done for now (STRING owner,
// PX about one cleanup interval).
func (k keys) sweepDue(ev string) string { return k.tag(ev) + ":sweep-due" }

// lock is the event's admission lock (STRING owner, PX LockTTL).
func (k keys) lock(ev string) string { return k.prefix + "admission:lock:{" + ev + "}" }

// lease is a cluster-wide duty's lease (STRING holder, PX): only workers
// write it.
func (k keys) lease(duty string) string { return k.prefix + "queue:lease:" + duty }

// visits is the worker's schedule, ZSET event -> ms of its next visit:
// written by the worker after each visit, and on the request path only by
// a check that lists the event again or queues its first waiter. Every
// listed event that may need an admission pass is on it, due no later than
// the pass is needed; a retire takes it off. Both schedules share one hash
// tag, so they live on one node.
func (k keys) visits() string { return k.prefix + "queue:{schedule}:visits" }

// sweeps is the stale sweep's schedule, ZSET event -> ms of its next sweep:
// every event with a line is on it (the worker adds it after a visit that
// finds a line); a retire takes it off.
func (k keys) sweeps() string { return k.prefix + "queue:{schedule}:sweeps" }

// activeEvents is the global SET of events the worker visits.
func (k keys) activeEvents() string { return k.prefix + "queue:active-events" }

// eventKeys is the KEYS list every per-event script receives, in the order
// their contract headers document.
func (k keys) eventKeys(ev string) []string {
	return []string{
		k.queue(ev),       // KEYS[1]
		k.active(ev),      // KEYS[2]
		k.swept(ev),       // KEYS[3]
		k.threshold(ev),   // KEYS[4]
		k.admissions(ev),  // KEYS[5]
		k.rankPending(ev), // KEYS[6]
		k.retired(ev),     // KEYS[7]
		k.epoch(ev),       // KEYS[8]
		k.served(ev),      // KEYS[9]
		k.unlogged(ev),    // KEYS[10]
		k.header(ev),      // KEYS[11]
		k.listed(ev),      // KEYS[12]
		k.changes(ev),     // KEYS[13]
		k.line(ev),        // KEYS[14]
	}
}

// Ranking periods, their key layouts (UTC) and how long a period's key lives.
var rankingPeriods = map[string]struct {
	key func(time.Time) string
	ttl time.Duration
}{
	"daily":   {func(t time.Time) string { return t.Format("2006-01-02") }, 2 * 24 * time.Hour},
	"weekly":  {isoWeek, 8 * 24 * time.Hour},
	"monthly": {func(t time.Time) string { return t.Format("2006-01") }, 32 * 24 * time.Hour},
}

func isoWeek(t time.Time) string {
	y, w := t.ISOWeek()
	return fmt.Sprintf("%04d-W%02d", y, w)
}

// ranking is the ZSET eventID -> admissions of the period containing t.
func (k keys) ranking(period string, t time.Time) string {
	return k.prefix + "ranking:" + period + ":" + rankingPeriods[period].key(t.UTC())
}

// LineKey is eventID's line (ZSET uid -> score, ZRANK = people ahead) under
// prefix: for tools that read a visitor's exact rank beside the store (vwr
// loadtest measures the people-ahead error against it).
func LineKey(prefix, eventID string) string { return keys{prefix}.queue(eventID) }

// VisitsKey is the worker's visit schedule under prefix (keys.visits): for
// tools that wait until every listed event's next visit is in the future.
func VisitsKey(prefix string) string { return keys{prefix}.visits() }

// RankPendingKey is eventID's admissions not yet added to the rankings
// under prefix, which an admission pass drains: for tools that wait until
// every event has had its first pass (vwr loadtest's idle phase).
func RankPendingKey(prefix, eventID string) string { return keys{prefix}.rankPending(eventID) }

// EventKeys is the KEYS list of eventID's per-event scripts under prefix
// (keys.eventKeys): for the benchmark's raw check.lua calls, which must
// send exactly what the store sends.
func EventKeys(prefix, eventID string) []string { return keys{prefix}.eventKeys(eventID) }
