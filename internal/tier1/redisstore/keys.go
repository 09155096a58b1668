package redisstore

import "strconv"

// keys builds every Redis key the Tier 1 store uses. One event's keys share
// the hash tag {eventID}, so each script touches a single Cluster slot; only
// the active-events set and the events index live outside it, and no script
// touches those.
type keys struct {
	prefix string // empty in production; tests may isolate themselves with one
}

func (k keys) tag(ev string) string { return k.prefix + "vwr1:{" + ev + "}" }

// event is a HASH: active, paused, shards, batch, pow (settings), serving (the
// serving counter), updated (unix ms), slot (last tick slot advanced) and
// adv (recent advances, "ms:admitted,…").
func (k keys) event(ev string) string { return k.tag(ev) + ":event" }

// shards is a HASH shard index -> positions that shard handed out.
func (k keys) shards(ev string) string { return k.tag(ev) + ":shards" }

// position is a HASH position, shard, created (unix ms) for one requestId;
// it expires with the position TTL.
func (k keys) position(ev, requestID string) string { return k.tag(ev) + ":pos:" + requestID }

// idem is a STRING "requestId:position:shard:createdMs" for one
// Idempotency-Key; it expires with the position TTL.
func (k keys) idem(ev, key string) string { return k.tag(ev) + ":idem:" + key }

// activeEvents is the global SET of active event ids the advancer visits.
func (k keys) activeEvents() string { return k.prefix + "vwr1:active-events" }

// events is the global ZSET of every event ever configured, scored by the
// unix ms of its last Configure (the operator console's event list).
func (k keys) events() string { return k.prefix + "vwr1:events" }

// sale is a HASH of an event's scheduled sale: opens, from (unix ms), round
// (scheduled), chain (hex), scheduled (unix ms), margin (ms), closed,
// closedat, mroot, root (hex), n, dround (the round R binds), moved,
// cancelled, cancelledat, drawn, bround, brand, bsig (hex), drawnat. The
// event hash keeps a summary of it (salephase, saleopens, salefrom,
// saleround, saleroot).
func (k keys) sale(ev string) string { return k.tag(ev) + ":sale" }

// tickets is a HASH requestId -> "<ticket hash hex>:<created ms>" of the
// pre-queue.
func (k keys) tickets(ev string) string { return k.tag(ev) + ":tickets" }

// ticketIdem is a STRING "requestId:<hash hex>:<created ms>" for one
// Idempotency-Key of a pre-queue arrival; it expires with the ticket TTL.
func (k keys) ticketIdem(ev, key string) string { return k.tag(ev) + ":tidem:" + key }

// drawBlob is a STRING: blob i of a drawn sale (draw.Result.Encode).
func (k keys) drawBlob(ev string, i int) string { return k.tag(ev) + ":draw:" + strconv.Itoa(i) }

// spent is a STRING, the Idempotency-Key hash ("-" without one) of the
// arrival that spent a proof-of-work challenge; it expires with the challenge.
func (k keys) spent(ev, challenge string) string { return k.tag(ev) + ":pow:" + challenge }

// arrivals is a STRING counter of one client key's arrivals in one window
// of the per-client bound; it expires at the window's end.
func (k keys) arrivals(ev, client string, window int64) string {
	return k.tag(ev) + ":client:" + client + ":" + strconv.FormatInt(window, 10)
}
