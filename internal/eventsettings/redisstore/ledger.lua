-- ledger.lua: append entries to one event's Tier 2 ledger
-- (eventsettings.Ledger).
--
-- KEYS[1] -> vwr1:{E}:t2ledger  HASH user id -> served value (queue.Served.Value, opaque here)
-- ARGV[1] -> retention ms: the ledger outlives its last append this long
-- ARGV[2k], ARGV[2k+1] -> user id, served value, for k = 1, 2, … in order
--
-- A later entry for a user replaces an earlier one. Returns how many
-- entries it wrote.
local n = 0
for i = 2, #ARGV - 1, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  n = n + 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n
