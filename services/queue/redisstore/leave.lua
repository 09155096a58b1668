-- leave.lua: remove a user from an event's line and active set at once.
--
-- KEYS[1..9] -> as in check.lua (queue, active, swept, threshold, admissions,
--               rank-pending, retired, epoch, restored)
-- ARGV[1] -> user id
--
-- Returns 1 when the user was queued or active, else 0.
local uid = ARGV[1]
local n = redis.call('ZREM', KEYS[1], uid) + redis.call('ZREM', KEYS[2], uid)
redis.call('HDEL', KEYS[9], uid)
if n > 0 then return 1 end
return 0
