-- configure.lua: create or update an event's settings and its shard counters.
--
-- KEYS[1] -> {E}:event   HASH settings + serving counter
-- KEYS[2] -> {E}:shards  HASH shard -> positions handed out
-- ARGV[1] -> active "1"/"0"
-- ARGV[2] -> paused "1"/"0"
-- ARGV[3] -> shard count n
-- ARGV[4] -> batch size
-- ARGV[5] -> now, unix ms
-- ARGV[6] -> proof of work, expected hashes per arrival (0: none)
--
-- Changing the shard count once any shard handed out a position would let
-- strided positions collide, so that returns "invalid" and writes nothing.
-- Otherwise shards 0..n-1 exist (at 0 when new), others are dropped, the
-- serving counter starts at 0, and it returns "ok".
local n = tonumber(ARGV[3])
local old = tonumber(redis.call('HGET', KEYS[1], 'shards'))
if old ~= nil and old ~= n then
  local vals = redis.call('HVALS', KEYS[2])
  for _, v in ipairs(vals) do
    if tonumber(v) > 0 then
      return 'invalid'
    end
  end
end
redis.call('HSET', KEYS[1], 'active', ARGV[1], 'paused', ARGV[2], 'shards', n, 'batch', ARGV[4], 'updated', ARGV[5], 'pow', ARGV[6])
redis.call('HSETNX', KEYS[1], 'serving', 0)
redis.call('HSETNX', KEYS[1], 'slot', 0)
for k = 0, n - 1 do
  redis.call('HSETNX', KEYS[2], tostring(k), 0)
end
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  if tonumber(f) >= n then
    redis.call('HDEL', KEYS[2], f)
  end
end
return 'ok'
