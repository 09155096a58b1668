-- beat.lua: many queued users' heartbeats in one call (one instance's
-- batch for one event, Store.Beat).
--
-- KEYS[1] -> {E}:queue  ZSET uid -> line score (lib.lua)
-- ARGV[1], ARGV[2], … -> pairs of user id, unix ms the instance last heard
--                        from them
--
-- Moves each user still in the line to the heartbeat tick of the time it
-- was heard (a write only when the tick changed); a user no longer queued
-- (let in, left, swept) is skipped, so a late batch changes nobody's
-- standing. Returns how many scores it wrote.
local wrote = 0
for i = 1, #ARGV - 1, 2 do
  local uid = ARGV[i]
  local sc = redis.call('ZSCORE', KEYS[1], uid)
  if sc then
    local s = tonumber(sc)
    local t = s - s % HB_TICKS + hb_tick(tonumber(ARGV[i + 1]))
    if t ~= s then
      redis.call('ZADD', KEYS[1], 'XX', t, uid)
      wrote = wrote + 1
    end
  end
end
return wrote
