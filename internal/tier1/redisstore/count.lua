-- count.lua: count one arrival of a client key unless it reached its bound.
--
-- KEYS[1] -> {E}:client:<client>:<window>  STRING arrivals in the window
-- ARGV[1] -> the bound (arrivals per window)
-- ARGV[2] -> ms until the window ends (> 0)
--
-- Returns {1, n} after counting (n = the new count), or {0, n} when the
-- count already is at the bound, writing nothing. The counter expires at
-- the window's end.
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then
  return {0, n}
end
n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {1, n}
