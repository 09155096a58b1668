-- leave.lua: remove a user from an event's line and active set at once.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> user id
-- ARGV[2] -> 'p' (came with a Tier 1 pass) or 'h' (named by a header)
-- ARGV[3] -> '1' with the durable ledger on (as ARGV[14] of check.lua)
-- ARGV[4] -> how long the served record outlives its last change, ms
-- ARGV[5], ARGV[6] -> the line-changes channel (keys.go) and the event id:
--            a waiter's leave PUBLISHes the id there (as admit.lua)
--
-- The leave is recorded as served ('L'): the pass is done, and the user's
-- entry token is never counted back after a loss. A header user who never
-- held a slot leaves no record (they may join again).
-- A waiter's leave goes to the line's change log (with the user id, so
-- that no instance answers them from memory again).
-- Returns 1 when the user was queued or active, else 0.
local uid = ARGV[1]
local n = redis.call('ZREM', KEYS[2], uid)
local sc = redis.call('ZSCORE', KEYS[1], uid)
if sc then
  redis.call('ZREM', KEYS[1], uid)
  log_change(KEYS, 'L' .. math.floor(tonumber(sc) / HB_TICKS) .. ':' .. uid)
  redis.call('PUBLISH', ARGV[5], ARGV[6])
  n = n + 1
end
redis.call('SREM', KEYS[11], uid)
if ARGV[2] == 'p' or redis.call('HEXISTS', KEYS[9], uid) == 1 then
  note_served(KEYS, uid, ARGV[2] .. 'L', ARGV[3], tonumber(ARGV[4]))
end
if n > 0 then return 1 end
return 0
