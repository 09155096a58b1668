-- retire.lua: drop an event from the active-events set, in two steps around
-- the caller's SREM. See docs/tier2-store.md for the races this closes.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> 'begin' (before the SREM) or 'recheck' (after it)
-- ARGV[2] -> tombstone TTL ms ('begin')
-- ARGV[3] -> tombstone token, unique to this retire ('begin')
--
-- An event is empty when its line, active set, pending rankings and the
-- changes not yet in the durable ledger all are. 'begin' on an empty event
-- unmarks it listed and leaves the tombstone {E}:retired = token before the
-- caller's SREM, so that every check.lua from then on lists the event
-- again itself (even if the caller dies before its SREM), and returns 0;
-- on a non-empty one it changes nothing and returns 1 (keep it). 'recheck'
-- returns 1 when someone joined since, and the caller must SADD the event
-- back; else 0.
local empty = redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) == 0
    and redis.call('EXISTS', KEYS[6]) == 0 and redis.call('EXISTS', KEYS[10]) == 0
if not empty then return 1 end
if ARGV[1] == 'begin' then
  redis.call('DEL', KEYS[12])
  redis.call('SET', KEYS[7], ARGV[3], 'PX', ARGV[2])
end
return 0
