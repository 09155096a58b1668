-- admit.lua: one admission pass over one event.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> now, unix ms
-- ARGV[2] -> active TTL ms (the length of a slot)
-- ARGV[3] -> default threshold
-- ARGV[4] -> batch size (most users admitted by this pass)
-- ARGV[5] -> rate window ms
-- ARGV[6] -> '1': ARGV[3] is the event's threshold (KEYS[4] ignored), '0':
--            the default, which KEYS[4] may override
-- ARGV[7..9] -> known epoch id, fresh epoch id, recovery window ms (as
--               ARGV[8..10] of check.lua)
-- ARGV[10] -> how long an admitted user's slot is held before they first
--             show up, ms (lib.lua activate)
-- ARGV[11] -> '1' with the durable ledger on (as ARGV[14] of check.lua)
-- ARGV[12] -> how long the served record outlives its last change, ms
-- ARGV[13], ARGV[14] -> the line-changes channel (keys.go) and the event id:
--            a pass that admits anyone PUBLISHes the id there, so that every
--            instance reads the line again at once (lines.go)
--
-- Drops freed slots; during a recovery window (or while the ledger's replay
-- is pending) admits nobody; else pops min(threshold - active, batch) users
-- off the head of the line into active with slots ending at now + TTL and
-- records them as served. It drains the admissions not yet added to the
-- rankings (the caller adds them) and reports the served changes not yet in
-- the durable ledger (the caller appends them, then runs logged.lua), except
-- while a replay is pending: changes made since the loss must outlive it.
-- The admissions go to the line's change log (one entry for the batch) and
-- raise the admitted-through frontier (KEYS[14] front).
--
-- Returns {slot end ms, queue size, active count, n, epoch id, recovering
-- until ms, replay pending (0|1), next free-at ms (the earliest a slot
-- frees by time: the worker's next visit, 0 when nobody is active), kinds
-- (n characters, 'p' or 'h'), uid_1 …
-- uid_n (line order), m, then m pairs of uid, served value (unlogged), then
-- pairs of unix second, count from rank-pending}.
local now = tonumber(ARGV[1])
local since = now - tonumber(ARGV[5])
local ledger, retain = ARGV[11], tonumber(ARGV[12])
drop_expired(KEYS, now, ledger, retain)
local th = threshold_of(KEYS[4], ARGV[3], ARGV[6])
local expires = now + tonumber(ARGV[2])
local eid, untl = epoch_of(KEYS[8], ARGV[7], ARGV[8], now, tonumber(ARGV[9]), ledger)
local replay = 0
if redis.call('HGET', KEYS[8], 'replay') == '1' then replay = 1 end

local admitted, kinds = {}, ''
local slots = math.min(th - redis.call('ZCARD', KEYS[2]), tonumber(ARGV[4]))
if now < untl then slots = 0 end
if slots > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], slots)
  for i = 1, #popped, 2 do
    local uid = popped[i]
    local kind = 'p'
    if redis.call('SREM', KEYS[11], uid) == 1 then kind = 'h' end
    activate(KEYS, uid, kind, now, expires, tonumber(ARGV[10]), ledger, retain)
    record_admission(KEYS[5], KEYS[6], uid, now, since)
    admitted[#admitted + 1] = uid
    kinds = kinds .. kind
  end
  if #popped > 0 then
    -- ZPOPMIN pops in score order: the last is the highest base let in.
    local top = math.floor(tonumber(popped[#popped]) / HB_TICKS)
    local front = tonumber(redis.call('HGET', KEYS[14], 'front')) or -1
    if top > front then redis.call('HSET', KEYS[14], 'front', top) end
    log_change(KEYS, 'A' .. (#popped / 2) .. ':' .. top)
    redis.call('PUBLISH', ARGV[13], ARGV[14])
  end
end

local next_free = 0
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #head == 2 then next_free = tonumber(head[2]) end
local reply = {expires, redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), #admitted, eid, untl, replay, next_free, kinds}
for _, uid in ipairs(admitted) do reply[#reply + 1] = uid end
local unlogged = {}
if replay == 0 then unlogged = redis.call('HGETALL', KEYS[10]) end
reply[#reply + 1] = #unlogged / 2
for _, v in ipairs(unlogged) do reply[#reply + 1] = v end
local pending = redis.call('HGETALL', KEYS[6])
for _, v in ipairs(pending) do reply[#reply + 1] = v end
redis.call('DEL', KEYS[6])
return reply
