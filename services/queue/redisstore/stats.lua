-- stats.lua: read an event's counters; changes nothing.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> now, unix ms
-- ARGV[2] -> default threshold
-- ARGV[3] -> rate window ms
--
-- Returns {queue size, unexpired active count, threshold, admissions in
-- window, oldest queued heartbeat ms as of the last stale sweep (to its
-- tick's start) or -1, recovering until ms (0 when
-- no epoch), first admission in window ms or 0}.
local now = tonumber(ARGV[1])
local _, untl = epoch_peek(KEYS[8], now)
local oldest = -1
if redis.call('ZCARD', KEYS[1]) > 0 then
  oldest = tonumber(redis.call('HGET', KEYS[3], 'oldest')) or -1
end
return {redis.call('ZCARD', KEYS[1]), redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf'),
  threshold_of(KEYS[4], ARGV[2], '0'), admitted_since(KEYS[5], now - tonumber(ARGV[3])), oldest, untl,
  first_admission_since(KEYS[5], now - tonumber(ARGV[3]))}
