-- check.lua: join a user to an event's line, or refresh them.
--
-- KEYS[1] -> {E}:queue        ZSET uid -> line score: base (Tier 1 position or arrival ms) × 1024 + heartbeat tick (lib.lua)
-- KEYS[2] -> {E}:active       ZSET uid -> expiry ms
-- KEYS[3] -> {E}:swept        HASH what the last stale sweep found (cleanup.lua)
-- KEYS[4] -> {E}:threshold    STRING per-event threshold
-- KEYS[5] -> {E}:admissions   ZSET "ms:uid" -> admission ms
-- KEYS[6] -> {E}:rank-pending HASH unix second -> admissions not yet ranked
-- KEYS[7] -> {E}:retired      STRING tombstone left by the worker's retire
-- KEYS[8] -> {E}:epoch        HASH id, born, until: loss detection (lib.lua epoch_of)
-- KEYS[9] -> {E}:restored     HASH uid -> slot end ms: put back after a loss, unclaimed (restore.lua)
-- ARGV[1] -> user id
-- ARGV[2] -> line base (Tier 1 position, or arrival ms)
-- ARGV[3] -> now, unix ms
-- ARGV[4] -> active TTL ms
-- ARGV[5] -> default threshold
-- ARGV[6] -> rate window ms
-- ARGV[7] -> '1': ARGV[5] is the event's threshold and KEYS[4] is ignored;
--            '0': ARGV[5] is the default and KEYS[4] may override it
-- ARGV[8] -> the epoch id the caller last saw for the event, or ''
-- ARGV[9] -> a fresh epoch id, used when the epoch is missing
-- ARGV[10] -> recovery window ms
-- ARGV[11] -> slot end ms of a valid entry token the user presented, or 0
--
-- Already queued: refresh the heartbeat. Already active: nothing changes (the
-- expiry never moves), except that a user put back after a loss claims its
-- slot's full end (lib.lua claimed). During a recovery window (see epoch_of) nobody new is
-- admitted, but a token holder missing from active is counted back into it
-- until ARGV[11]. Otherwise, line empty and fewer than threshold active:
-- activate until now + TTL. Otherwise queue with ARGV[2] as the base.
--
-- Returns {status ("queued"|"active"), activated (0|1), rank (0-based),
-- queue size, active count, threshold, admissions in window, expiry ms (0
-- when queued), relist (the retired tombstone's token, or "" when there is
-- none), epoch id, recovering until ms, first admission in the rate window
-- ms (queued replies only) or 0}. With a token the caller must SADD the event to the active set
-- again and then clear the tombstone with release.lua. The tombstone stays
-- until then, so every check that runs before the event is listed again
-- relists it itself.
local uid = ARGV[1]
local now = tonumber(ARGV[3])
local since = now - tonumber(ARGV[6])
drop_expired(KEYS[2], now)
local th = threshold_of(KEYS[4], ARGV[5], ARGV[7])
local eid, untl = epoch_of(KEYS[8], ARGV[8], ARGV[9], now, tonumber(ARGV[10]))
local recovering = now < untl
local holder = tonumber(ARGV[11]) or 0

local status, activated, rank, expires = 'queued', 0, 0, 0
local sc = redis.call('ZSCORE', KEYS[1], uid)
if sc then
  heartbeat(KEYS[1], uid, tonumber(sc), now)
  rank = redis.call('ZRANK', KEYS[1], uid)
else
  local exp = redis.call('ZSCORE', KEYS[2], uid)
  if exp then
    status, expires = 'active', claimed(KEYS[2], KEYS[9], uid, tonumber(exp))
  elseif recovering and holder > now then
    -- Admitted before the loss: counted again, not admitted anew.
    status, expires = 'active', holder
    redis.call('ZADD', KEYS[2], holder, uid)
  elseif not recovering and redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) < th then
    status, activated, expires = 'active', 1, now + tonumber(ARGV[4])
    redis.call('ZADD', KEYS[2], expires, uid)
    record_admission(KEYS[5], KEYS[6], uid, now, since)
  else
    redis.call('ZADD', KEYS[1], line_score(ARGV[2], now), uid)
    rank = redis.call('ZRANK', KEYS[1], uid)
  end
end

local relist = redis.call('GET', KEYS[7]) or ''
return view(status, activated, rank, KEYS, th, since, expires, relist, eid, untl)
