-- list.lua: the venue's seats with their holders, and the remaining count.
-- Runs after purge.lua (same KEYS[1..2], ARGV[1..2]).
--
-- KEYS[1]    -> seat:holds:{E}
-- KEYS[2]    -> seat:remaining:{E}
-- KEYS[3..n] -> seat:hold:{E}:{seat} for every seat, in venue order
-- ARGV[1]    -> now (ms)
-- ARGV[2]    -> total seats
-- ARGV[3..n] -> the seat ids, in the same order as KEYS[3..n]
-- Returns {remaining, holder_1, expiresAtMs_1, holder_2, …}; holder is "" for a free seat.
local out = {rem}
for i = 3, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if holder then
    out[#out + 1] = holder
    out[#out + 1] = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]) or 0)
  else
    out[#out + 1] = ''
    out[#out + 1] = 0
  end
end
return out
