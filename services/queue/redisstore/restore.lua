-- restore.lua: put back users admitted before the event's state was lost.
--
-- KEYS[1..9] -> as in check.lua (queue, active, swept, threshold, admissions,
--               rank-pending, retired, epoch, restored)
-- ARGV[1] -> now, unix ms
-- ARGV[2k], ARGV[2k+1] -> user id, end of its slot (ms), for k = 1, 2, …
--
-- Only while the recovery window runs (nobody new is admitted then, so the
-- slots are still theirs): each user whose slot runs past now and who is not
-- active already becomes active and leaves the line if it had joined
-- again. The instance cannot know whether the user left before the
-- loss, so the slot is held only until the window ends, and its full end
-- waits in KEYS[9] until the user's next check or heartbeat claims it (lib.lua
-- claimed). Returns how many it put back.
local now = tonumber(ARGV[1])
local _, untl = epoch_peek(KEYS[8])
if now >= untl then return 0 end
local n = 0
for i = 2, #ARGV - 1, 2 do
  local uid, exp = ARGV[i], tonumber(ARGV[i + 1])
  if exp > now and not redis.call('ZSCORE', KEYS[2], uid) then
    redis.call('ZADD', KEYS[2], math.min(exp, untl), uid)
    if exp > untl then redis.call('HSET', KEYS[9], uid, exp) end
    redis.call('ZREM', KEYS[1], uid)
    n = n + 1
  end
end
if n > 0 then redis.call('PEXPIRE', KEYS[9], untl - now) end
return n
