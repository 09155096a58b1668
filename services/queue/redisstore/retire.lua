-- retire.lua: decide, after the caller's SREM, whether an event stays in the
-- active-events set. See docs/tier2-store.md for the race this closes.
--
-- KEYS[1..11] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header)
-- ARGV[1] -> tombstone TTL ms
-- ARGV[2] -> tombstone token, unique to this retire
--
-- When the line, the active set, the pending rankings and the changes not
-- yet in the durable ledger are all empty, it
-- leaves the tombstone {E}:retired = token, so that every check.lua until a
-- relist clears it tells its caller to SADD the event again, and returns 0.
-- Otherwise it returns 1: the caller must SADD the event back.
if redis.call('ZCARD', KEYS[1]) > 0 or redis.call('ZCARD', KEYS[2]) > 0
    or redis.call('EXISTS', KEYS[6]) == 1 or redis.call('EXISTS', KEYS[10]) == 1 then
  return 1
end
redis.call('SET', KEYS[7], ARGV[2], 'PX', ARGV[1])
return 0
