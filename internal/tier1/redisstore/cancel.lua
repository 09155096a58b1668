-- cancel.lua: cancel a scheduled sale that is not drawn: its list closes for
-- good (ticket.lua refuses), and the sale is never drawn.
--
-- KEYS[1] -> {E}:event  HASH settings (+ sale summary)
-- KEYS[2] -> {E}:sale   HASH the sale
-- ARGV[1] -> now, unix ms
--
-- Returns "none" without a sale, "drawn" once drawn (nothing written), else
-- "ok" (also when it was cancelled already; the first time is kept).
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 'none'
end
if redis.call('HGET', KEYS[2], 'drawn') == '1' then
  return 'drawn'
end
if redis.call('HGET', KEYS[2], 'cancelled') == '1' then
  return 'ok'
end
if redis.call('HGET', KEYS[2], 'closed') ~= '1' then
  redis.call('HSET', KEYS[2], 'closed', '1', 'closedat', ARGV[1])
end
redis.call('HSET', KEYS[2], 'cancelled', '1', 'cancelledat', ARGV[1])
redis.call('HSET', KEYS[1], 'salephase', 4)
return 'ok'
