-- commit_close.lua: write a closed list's roots and move the shard counters
-- so positions 1..n are taken, once.
--
-- KEYS[1] -> {E}:event   HASH settings (+ sale summary)
-- KEYS[2] -> {E}:sale    HASH the sale
-- KEYS[3] -> {E}:shards  HASH shard -> positions handed out
-- ARGV[1] -> Merkle root, hex
-- ARGV[2] -> commitment R, hex
-- ARGV[3] -> n
-- ARGV[4] -> now, unix ms
-- ARGV[5] -> shard count S
-- ARGV[6] -> the round R binds
-- ARGV[7] -> why it is not the scheduled round ("" or "late-close")
-- ARGV[8..7+S] -> counter of shard 0..S-1 (tier1.CoveringCounters)
--
-- Returns "open" when the list is not closed, "conflict" when R is already
-- written, the shard count is not S or a counter is not 0 (nothing
-- written), else "ok".
if redis.call('HGET', KEYS[2], 'closed') ~= '1' then
  return 'open'
end
if redis.call('HGET', KEYS[2], 'cancelled') == '1' then
  return 'conflict'
end
if redis.call('HEXISTS', KEYS[2], 'root') == 1 then
  return 'conflict'
end
local s = tonumber(ARGV[5])
if tonumber(redis.call('HGET', KEYS[1], 'shards')) ~= s then
  return 'conflict'
end
for k = 0, s - 1 do
  local c = redis.call('HGET', KEYS[3], tostring(k))
  if c and tonumber(c) ~= 0 then
    return 'conflict'
  end
end
for k = 0, s - 1 do
  redis.call('HSET', KEYS[3], tostring(k), ARGV[8 + k])
end
redis.call('HSET', KEYS[2], 'mroot', ARGV[1], 'root', ARGV[2], 'n', ARGV[3], 'committed', ARGV[4],
  'dround', ARGV[6], 'moved', ARGV[7])
redis.call('HSET', KEYS[1], 'salephase', 2, 'saleroot', ARGV[2], 'saleround', ARGV[6])
return 'ok'
