-- schedule.lua: set an event's scheduled sale, unless its list closed.
--
-- KEYS[1] -> {E}:event  HASH settings (+ the sale summary written here)
-- KEYS[2] -> {E}:sale   HASH the sale
-- ARGV[1] -> opensAt, unix ms
-- ARGV[2] -> prequeueFrom, unix ms (0: none)
-- ARGV[3] -> beacon round
-- ARGV[4] -> chain hash, hex
-- ARGV[5] -> now, unix ms
--
-- Returns "closed" (and writes nothing) once the list has closed, else "ok".
if redis.call('HGET', KEYS[2], 'closed') == '1' then
  return 'closed'
end
redis.call('HSET', KEYS[2], 'opens', ARGV[1], 'from', ARGV[2], 'round', ARGV[3], 'chain', ARGV[4], 'closed', '0', 'scheduled', ARGV[5])
redis.call('HSET', KEYS[1], 'salephase', 1, 'saleopens', ARGV[1], 'salefrom', ARGV[2], 'saleround', ARGV[3], 'saleroot', '')
return 'ok'
