-- schedule.lua: set an event's scheduled sale, unless it was cancelled, its
-- list closed, or its pre-queue handed out a ticket (whose holder was told
-- the opening and the round, so the sale must not move).
--
-- KEYS[1] -> {E}:event    HASH settings (+ the sale summary written here)
-- KEYS[2] -> {E}:sale     HASH the sale
-- KEYS[3] -> {E}:tickets  HASH the pre-queue's tickets
-- ARGV[1] -> opensAt, unix ms
-- ARGV[2] -> prequeueFrom, unix ms (0: none)
-- ARGV[3] -> beacon round
-- ARGV[4] -> chain hash, hex
-- ARGV[5] -> now, unix ms
-- ARGV[6] -> margin, ms
--
-- Returns "cancelled", "closed" or "ticketed" (and writes nothing) when the
-- sale cannot move, else "ok".
if redis.call('HGET', KEYS[2], 'cancelled') == '1' then
  return 'cancelled'
end
if redis.call('HGET', KEYS[2], 'closed') == '1' then
  return 'closed'
end
if redis.call('HLEN', KEYS[3]) > 0 then
  return 'ticketed'
end
redis.call('HSET', KEYS[2], 'opens', ARGV[1], 'from', ARGV[2], 'round', ARGV[3], 'chain', ARGV[4], 'closed', '0',
  'scheduled', ARGV[5], 'margin', ARGV[6])
redis.call('HSET', KEYS[1], 'salephase', 1, 'saleopens', ARGV[1], 'salefrom', ARGV[2], 'saleround', ARGV[3], 'saleroot', '')
return 'ok'
