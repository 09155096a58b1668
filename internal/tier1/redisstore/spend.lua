-- spend.lua: record a proof-of-work solution as spent, once.
--
-- KEYS[1] -> {E}:pow:<challenge>  STRING key hash of the arrival that spent it
-- ARGV[1] -> the arrival's Idempotency-Key hash, "-" without one
-- ARGV[2] -> ms until the challenge expires (> 0)
-- ARGV[3] -> what a new record holds: ARGV[1], or "-" while the arrival is
--            still to be counted (unclaimed; ClaimSolution writes ARGV[1])
--
-- Returns "first" after writing KEYS[1]; "retry" when it already holds
-- ARGV[1] (and ARGV[1] is not "-"); "replayed" otherwise. Only "first" writes.
local prev = redis.call('GET', KEYS[1])
if not prev then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
  return 'first'
end
if prev == ARGV[1] and ARGV[1] ~= '-' then
  return 'retry'
end
return 'replayed'
