-- ticket.lua: record a pre-queue ticket while the list is open, idempotently.
--
-- KEYS[1] -> {E}:sale          HASH the sale (closed = "1" once closed)
-- KEYS[2] -> {E}:tickets       HASH requestId -> "<hash hex>:<created ms>"
-- KEYS[3] -> {E}:tidem:<key>   STRING first answer for the Idempotency-Key
-- ARGV[1] -> new requestId
-- ARGV[2] -> ticket hash, hex
-- ARGV[3] -> ticket TTL ms (for the idempotency record)
-- ARGV[4] -> "1" when KEYS[3] is a real key, "0" without Idempotency-Key
-- ARGV[5] -> now, unix ms
--
-- Returns {"reused", "rid:hash:createdMs", opens, round} when the key was
-- seen, {"closed"} when there is no sale or its list closed, else {"new",
-- opens, round}: the schedule the ticket is under (final, since a ticket
-- stops schedule.lua).
if ARGV[4] == '1' then
  local v = redis.call('GET', KEYS[3])
  if v then
    local s = redis.call('HMGET', KEYS[1], 'opens', 'round')
    return {'reused', v, s[1], s[2]}
  end
end
local s = redis.call('HMGET', KEYS[1], 'closed', 'opens', 'round')
if s[1] ~= '0' then
  return {'closed'}
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ':' .. ARGV[5])
if ARGV[4] == '1' then
  redis.call('SET', KEYS[3], ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[5], 'PX', ARGV[3])
end
return {'new', s[2], s[3]}
