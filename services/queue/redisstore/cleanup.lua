-- cleanup.lua: drop queued users whose heartbeat went stale.
--
-- KEYS[1..9] -> as in check.lua (queue, active, seen, threshold, admissions,
--               rank-pending, retired, epoch, restored)
-- ARGV[1] -> cutoff, unix ms: heartbeats before it are stale
-- ARGV[2] -> most users removed by one call
--
-- Removes each stale user from the line and from seen in the same step.
-- Returns how many it removed; the caller repeats while that equals ARGV[2].
local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, uid in ipairs(stale) do
  redis.call('ZREM', KEYS[1], uid)
  redis.call('ZREM', KEYS[3], uid)
end
return #stale
