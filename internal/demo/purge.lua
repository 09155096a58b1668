-- purge.lua: shared prelude of hold.lua and list.lua (prepended in Go). It
-- gives back the seats whose hold has run out and makes sure the
-- remaining-seat count exists.
--
-- KEYS[1] -> seat:holds:{E}      ZSET  member = seat id, score = hold expiry (ms)
-- KEYS[2] -> seat:remaining:{E}  STRING remaining seats
-- ARGV[1] -> now (ms, from the injected clock)
-- ARGV[2] -> total seats of the venue
-- Leaves: local `now`, `rem` (remaining seats after the purge).
local now = tonumber(ARGV[1])
local total = tonumber(ARGV[2])
local expired = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local rem = redis.call('GET', KEYS[2])
if not rem then
  -- First use, or Redis lost the count: rebuild it from the live holds.
  rem = total - redis.call('ZCARD', KEYS[1])
  redis.call('SET', KEYS[2], rem)
else
  rem = tonumber(rem)
  if expired > 0 then
    rem = redis.call('INCRBY', KEYS[2], expired)
  end
end
