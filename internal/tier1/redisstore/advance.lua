-- advance.lua: raise the serving counter only if nobody else did.
--
-- KEYS[1] -> {E}:event  HASH settings + serving counter
-- ARGV[1] -> expected serving counter (from)
-- ARGV[2] -> new serving counter (to)
-- ARGV[3] -> now, unix ms
-- ARGV[4] -> tick slot, or 0 for a manual advance
-- ARGV[5] -> advance history to store, "ms:admitted,…"
--
-- Returns 1 after writing serving=to, updated=now, adv and (ARGV[4] > 0)
-- slot; 0 when the event is missing, serving is not ARGV[1], or the slot was
-- already advanced.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if tonumber(redis.call('HGET', KEYS[1], 'serving')) ~= tonumber(ARGV[1]) then
  return 0
end
local slot = tonumber(ARGV[4])
if slot > 0 then
  local last = tonumber(redis.call('HGET', KEYS[1], 'slot')) or 0
  if last >= slot then
    return 0
  end
  redis.call('HSET', KEYS[1], 'slot', ARGV[4])
end
redis.call('HSET', KEYS[1], 'serving', ARGV[2], 'updated', ARGV[3], 'adv', ARGV[5])
return 1
