-- admit.lua: one admission pass over one event.
--
-- KEYS[1..9] -> as in check.lua (queue, active, swept, threshold, admissions,
--               rank-pending, retired, epoch, restored)
-- ARGV[1] -> now, unix ms
-- ARGV[2] -> active TTL ms
-- ARGV[3] -> default threshold
-- ARGV[4] -> batch size (most users admitted by this pass)
-- ARGV[5] -> rate window ms
-- ARGV[6] -> '1': ARGV[3] is the event's threshold (KEYS[4] ignored), '0':
--            the default, which KEYS[4] may override
-- ARGV[7..9] -> known epoch id, fresh epoch id, recovery window ms (as
--               ARGV[8..10] of check.lua)
--
-- Drops expired actives; during a recovery window admits nobody; else pops min(threshold - active, batch) users off
-- the head of the line into active with expiry now + TTL, and drains the
-- admissions not yet added to the rankings (the caller adds them).
--
-- Returns {expiry ms, queue size, active count, n, epoch id, recovering
-- until ms, uid_1 … uid_n (line order), then pairs of unix second, count
-- from rank-pending}.
local now = tonumber(ARGV[1])
local since = now - tonumber(ARGV[5])
drop_expired(KEYS[2], now)
local th = threshold_of(KEYS[4], ARGV[3], ARGV[6])
local expires = now + tonumber(ARGV[2])
local eid, untl = epoch_of(KEYS[8], ARGV[7], ARGV[8], now, tonumber(ARGV[9]))

local admitted = {}
local slots = math.min(th - redis.call('ZCARD', KEYS[2]), tonumber(ARGV[4]))
if now < untl then slots = 0 end
if slots > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], slots)
  for i = 1, #popped, 2 do
    local uid = popped[i]
    redis.call('ZADD', KEYS[2], expires, uid)
    record_admission(KEYS[5], KEYS[6], uid, now, since)
    admitted[#admitted + 1] = uid
  end
end

local reply = {expires, redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), #admitted, eid, untl}
for _, uid in ipairs(admitted) do reply[#reply + 1] = uid end
local pending = redis.call('HGETALL', KEYS[6])
for _, v in ipairs(pending) do reply[#reply + 1] = v end
redis.call('DEL', KEYS[6])
return reply
