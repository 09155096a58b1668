-- hold.lua: hold one seat for one visitor, atomically with the remaining count.
-- Runs after purge.lua (same KEYS[1..2], ARGV[1..2]).
--
-- KEYS[1] -> seat:holds:{E}
-- KEYS[2] -> seat:remaining:{E}
-- KEYS[3] -> seat:hold:{E}:{seat}   STRING holder uid, TTL = hold time
-- ARGV[1] -> now (ms)
-- ARGV[2] -> total seats
-- ARGV[3] -> seat id
-- ARGV[4] -> uid (from the verified entry token)
-- ARGV[5] -> hold time (s)
-- Returns {code, remaining, expiresAtMs}:
--   code 1 = held now, 2 = already held by this uid, 0 = taken by someone else, -1 = sold out
local seat, uid, ttl = ARGV[3], ARGV[4], tonumber(ARGV[5])
local holder = redis.call('GET', KEYS[3])
if holder == uid then
  return {2, rem, tonumber(redis.call('ZSCORE', KEYS[1], seat) or 0)}
end
if holder then
  return {0, rem, 0}
end
if redis.call('ZSCORE', KEYS[1], seat) then
  -- Redis already expired the key but our clock had not purged it yet: give it back.
  redis.call('ZREM', KEYS[1], seat)
  rem = redis.call('INCR', KEYS[2])
end
if rem <= 0 then
  return {-1, rem, 0}
end
redis.call('SET', KEYS[3], uid, 'NX', 'EX', ttl)
local exp = now + ttl * 1000
redis.call('ZADD', KEYS[1], exp, seat)
rem = redis.call('DECR', KEYS[2])
return {1, rem, exp}
