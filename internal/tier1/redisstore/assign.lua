-- assign.lua: hand out the next position of one shard, idempotently.
--
-- KEYS[1] -> {E}:event       HASH settings + serving counter
-- KEYS[2] -> {E}:shards      HASH shard -> positions handed out
-- KEYS[3] -> {E}:pos:<rid>   HASH position record of the new requestId
-- KEYS[4] -> {E}:idem:<key>  STRING first answer for the Idempotency-Key
-- ARGV[1] -> shard index k
-- ARGV[2] -> shard count n the caller believes
-- ARGV[3] -> new requestId
-- ARGV[4] -> now, unix ms
-- ARGV[5] -> position TTL ms
-- ARGV[6] -> "1" when KEYS[4] is a real key, "0" without Idempotency-Key
--
-- Returns {"reused", "rid:pos:shard:createdMs"} when the key was seen,
-- {"conflict"} when the event's shard count is not ARGV[2] (or it has none),
-- else {"new", position}: counter k is incremented to c and the position is
-- k+1+(c-1)*n (tier1.StridedPosition), recorded under KEYS[3] (and KEYS[4]).
if ARGV[6] == '1' then
  local v = redis.call('GET', KEYS[4])
  if v then
    return {'reused', v}
  end
end
local n = tonumber(redis.call('HGET', KEYS[1], 'shards'))
if n == nil or n ~= tonumber(ARGV[2]) then
  return {'conflict'}
end
local k = tonumber(ARGV[1])
local c = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
local pos = k + 1 + (c - 1) * n
redis.call('HSET', KEYS[3], 'position', pos, 'shard', k, 'created', ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
if ARGV[6] == '1' then
  redis.call('SET', KEYS[4], ARGV[3] .. ':' .. pos .. ':' .. k .. ':' .. ARGV[4], 'PX', ARGV[5])
end
return {'new', pos}
