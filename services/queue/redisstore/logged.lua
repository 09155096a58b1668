-- logged.lua: forget served changes the durable ledger now holds.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[2k-1], ARGV[2k] -> user id, the served value appended, for k = 1, 2, …
--
-- Removes each user from KEYS[10] only if it still holds the value
-- appended: a change made meanwhile waits for the next append.
-- Returns how many it removed.
local n = 0
for i = 1, #ARGV - 1, 2 do
  if redis.call('HGET', KEYS[10], ARGV[i]) == ARGV[i + 1] then
    n = n + redis.call('HDEL', KEYS[10], ARGV[i])
  end
end
return n
