-- commit_draw.lua: record a sale's beacon round, once. The draw blobs are
-- written before (identical for every drawer, so a loser's copy is harmless).
--
-- KEYS[1] -> {E}:event  HASH settings (+ sale summary)
-- KEYS[2] -> {E}:sale   HASH the sale
-- ARGV[1] -> beacon round
-- ARGV[2] -> beacon randomness, hex
-- ARGV[3] -> beacon signature, hex
-- ARGV[4] -> now, unix ms
--
-- Returns "open" when R is not committed, "conflict" when already drawn
-- (or cancelled), else "ok".
if redis.call('HEXISTS', KEYS[2], 'root') == 0 then
  return 'open'
end
if redis.call('HGET', KEYS[2], 'drawn') == '1' or redis.call('HGET', KEYS[2], 'cancelled') == '1' then
  return 'conflict'
end
redis.call('HSET', KEYS[2], 'drawn', '1', 'bround', ARGV[1], 'brand', ARGV[2], 'bsig', ARGV[3], 'drawnat', ARGV[4])
redis.call('HSET', KEYS[1], 'salephase', 3)
return 'ok'
