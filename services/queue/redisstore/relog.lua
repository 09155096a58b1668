-- relog.lua: queue one page of an event's served record for the durable
-- ledger again, after the settings store (which keeps the ledger) lost data.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> HSCAN cursor of KEYS[9] ('0' to start)
-- ARGV[2] -> page size (HSCAN COUNT)
--
-- Copies each served value of the page into KEYS[10] unless a change is
-- already waiting there (it is the same or newer). Atomic per page, so a
-- change made meanwhile is never overwritten by an older value.
-- Returns {next cursor ('0' after the last page), values copied}.
local page = redis.call('HSCAN', KEYS[9], ARGV[1], 'COUNT', tonumber(ARGV[2]))
local kv, n = page[2], 0
for i = 1, #kv - 1, 2 do
  n = n + redis.call('HSETNX', KEYS[10], kv[i], kv[i + 1])
end
return {page[1], n}
