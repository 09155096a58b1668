-- check.lua: join a user to an event's line, or refresh them.
--
-- KEYS[1] -> {E}:queue        ZSET uid -> line score: base (Tier 1 position or arrival ms) × 1024 + heartbeat tick (lib.lua)
-- KEYS[2] -> {E}:active       ZSET uid -> free-at ms: the slot's end, or sooner once the holder stops showing up (lib.lua seen)
-- KEYS[3] -> {E}:swept        HASH what the last stale sweep found (cleanup.lua)
-- KEYS[4] -> {E}:threshold    STRING per-event threshold
-- KEYS[5] -> {E}:admissions   ZSET "ms:uid" -> admission ms
-- KEYS[6] -> {E}:rank-pending HASH unix second -> admissions not yet ranked
-- KEYS[7] -> {E}:retired      STRING tombstone left by the worker's retire
-- KEYS[8] -> {E}:epoch        HASH id, born, until, replay: loss detection (lib.lua epoch_of)
-- KEYS[9] -> {E}:served       HASH uid -> served value: whom the event let in, and who left (lib.lua)
-- KEYS[10] -> {E}:unlogged    HASH uid -> served value not yet in the durable ledger
-- KEYS[11] -> {E}:header      SET waiters named by a trusted header (not a Tier 1 pass)
-- KEYS[12] -> {E}:listed      STRING "1" while the event is in the active-events set
-- KEYS[13] -> {E}:changes     LIST the line's change log, newest last (lib.lua log_change)
-- KEYS[14] -> {E}:line        HASH seq (changes logged so far), front (highest base admitted)
-- ARGV[1] -> user id
-- ARGV[2] -> line base (Tier 1 position, or arrival ms)
-- ARGV[3] -> now, unix ms
-- ARGV[4] -> active TTL ms (the length of a slot)
-- ARGV[5] -> default threshold
-- ARGV[6] -> rate window ms
-- ARGV[7] -> '1': ARGV[5] is the event's threshold and KEYS[4] is ignored;
--            '0': ARGV[5] is the default and KEYS[4] may override it
-- ARGV[8] -> the epoch id the caller last saw for the event, or '' (a
--            valid entry token, ARGV[11], for an event with no epoch counts
--            as having seen one: the event's state was lost)
-- ARGV[9] -> a fresh epoch id, used when the epoch is missing
-- ARGV[10] -> recovery window ms
-- ARGV[11] -> slot end ms of a valid entry token the user presented, or 0
-- ARGV[12] -> 'p': the user came with a Tier 1 pass; 'h': named by a header
-- ARGV[13] -> idle limit ms: a holder who shows up no more frees the slot then
-- ARGV[14] -> '1' with the durable ledger on: note changes in KEYS[10]
-- ARGV[15] -> how long the served record outlives its last change, ms
-- ARGV[17] -> '1': the caller batches queued users' heartbeats (beat.lua):
--             an already queued user's heartbeat is not written here
-- ARGV[18], ARGV[19] -> the line-changes channel (keys.go) and the event
--             id: a join that lands ahead of someone already waiting
--             PUBLISHes "<event id> <change count> <base>" there, so that
--             every instance counts it at once (lines.go); absent: none
-- ARGV[16] -> '1' for a renewal (a status or heartbeat with an entry
--             token): a holder is counted back as above, but nobody joins
--             or is admitted; the reply's status is then ""
--
-- Already queued: refresh the heartbeat. Already active: the user showed
-- up (lib.lua seen: the idle limit starts again; a user put back after a
-- loss claims its slot). While the ledger's replay is pending after a loss,
-- anyone else is asked to come back in a moment (status "wait"): only the
-- replay can tell who they were. During a recovery window (see epoch_of)
-- nobody new is admitted, but a token holder missing from active who has
-- not left (nor been freed
-- after the idle limit) is counted back into it until ARGV[11]. Otherwise, a pass already served
-- (admitted once, or left) is done: status "done" with the reason, and
-- nothing changes. Otherwise, line empty and fewer than threshold active:
-- activate until now + TTL. Otherwise queue with ARGV[2] as the base (a
-- header user served before joins again this way, at the back).
--
-- Returns lib.lua's view: {status ("queued"|"active"|"done"|"wait", or ""
-- for a renewal not counted back), activated
-- (0|1), rank (0-based), queue size, active count, threshold, admissions in
-- window, slot end ms (0 unless active), relist (the retired tombstone's
-- token, "+" when the event is not marked listed, or "" when it is), epoch
-- id, recovering until ms, first admission in the rate window ms (queued
-- replies only) or 0, done reason or ""}. With a relist token the caller
-- must SADD the event to the active set and then mark it listed with
-- relisted.lua. Until then every check relists it itself, so none returns
-- with its user in an unlisted event, and a listed event's check touches
-- nothing outside the event's slot. A 14th field, 1 when this call queued
-- the user into an empty line (the event's first waiter) and else 0, tells
-- the caller to put the event on the worker's visit schedule: the only
-- write outside the event's slot a join of a listed event makes, and only
-- when the line forms. A 15th and 16th field, for a queued user, are the
-- line's change count as of this step and the user's base (lib.lua
-- line_place): the caller may answer their later polls from memory.
local uid = ARGV[1]
local now = tonumber(ARGV[3])
local since = now - tonumber(ARGV[6])
local kind, idle, ledger, retain = ARGV[12], tonumber(ARGV[13]), ARGV[14], tonumber(ARGV[15])
local renewal = ARGV[16] == '1'
drop_expired(KEYS, now, ledger, retain)
local th = threshold_of(KEYS[4], ARGV[5], ARGV[7])
local holder = tonumber(ARGV[11]) or 0
local known = ARGV[8]
if known == '' and holder > now and redis.call('EXISTS', KEYS[8]) == 0 then
  -- A valid entry token for an event with no epoch: its state was lost,
  -- even if this instance never saw the epoch.
  known = '?'
end
local eid, untl, replaying = epoch_of(KEYS[8], known, ARGV[9], now, tonumber(ARGV[10]), ledger)
local recovering = now < untl

local status, activated, rank, expires, done, first = 'queued', 0, 0, 0, '', 0
local sc = redis.call('ZSCORE', KEYS[1], uid)
if sc then
  if ARGV[17] ~= '1' then heartbeat(KEYS[1], uid, tonumber(sc), now) end
  rank = redis.call('ZRANK', KEYS[1], uid)
else
  local exp = redis.call('ZSCORE', KEYS[2], uid)
  local served = redis.call('HGET', KEYS[9], uid)
  local back = holder
  if slot_of(served) then back = math.min(back, slot_of(served)) end
  if exp then
    status, expires = 'active', seen(KEYS, uid, tonumber(exp), now, idle)
  elseif replaying then
    -- The store lost this user; only the ledger's replay (in a moment) can
    -- tell whether they were let in just before, hold a slot, or left:
    -- ask again then, rather than queue them or count them back now.
    status = 'wait'
  elseif recovering and back > now and not is_gone(served) then
    -- Admitted before the loss: counted again, not admitted anew.
    status, expires = 'active', back
    redis.call('ZADD', KEYS[2], math.min(back, now + idle), uid)
    if not served then note_served(KEYS, uid, kind .. back, ledger, retain) end
  elseif renewal then
    status = ''
    if served then done = done_reason(served, now) end
  elseif served and kind == 'p' then
    status, done = 'done', done_reason(served, now)
  elseif not recovering and redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) < th then
    status, activated, expires = 'active', 1, now + tonumber(ARGV[4])
    activate(KEYS, uid, kind, now, expires, idle, ledger, retain)
    record_admission(KEYS[5], KEYS[6], uid, now, since)
  else
    if redis.call('ZCARD', KEYS[1]) == 0 then first = 1 end
    redis.call('ZADD', KEYS[1], line_score(ARGV[2], now), uid)
    local seq = log_change(KEYS, 'J' .. ARGV[2])
    if kind == 'h' then redis.call('SADD', KEYS[11], uid) end
    rank = redis.call('ZRANK', KEYS[1], uid)
    -- Ahead of someone: their remembered places are one further back.
    -- A join at the tail changes nobody's place and publishes nothing.
    if ARGV[18] and ARGV[18] ~= '' and rank + 1 < redis.call('ZCARD', KEYS[1]) then
      redis.call('PUBLISH', ARGV[18], ARGV[19] .. ' ' .. seq .. ' ' .. ARGV[2])
    end
  end
end

local relist = redis.call('GET', KEYS[7]) or ''
if relist == '' and redis.call('EXISTS', KEYS[12]) == 0 then relist = '+' end
local reply = view(status, activated, rank, KEYS, th, since, expires, relist, eid, untl, done)
reply[14] = first
reply[15], reply[16] = line_place(KEYS, status, uid)
return reply
