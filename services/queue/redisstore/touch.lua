-- touch.lua: refresh a queued user's heartbeat, or an active user's (the
-- idle limit starts again), and report where the user stands; join nobody.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> user id
-- ARGV[2] -> now, unix ms
-- ARGV[3] -> default threshold
-- ARGV[4] -> rate window ms
-- ARGV[5] -> idle limit ms (as ARGV[13] of check.lua)
-- ARGV[6] -> '1' with the durable ledger on (as ARGV[14] of check.lua)
-- ARGV[7] -> how long the served record outlives its last change, ms
-- ARGV[8] -> '1': the caller batches queued users' heartbeats (beat.lua):
--            a queued user's heartbeat is not written here
--
-- Returns the reply of check.lua (16 fields; the 14th always 0), with status "" when the user is neither
-- queued nor active (then only the counters are meaningful, and the done
-- reason is set when the user was served before), activated always 0 and
-- relist always "". The epoch is only read ('' when none): touch starts
-- nothing. Like check.lua, it lets a user put back after a loss claim its
-- slot.
local uid = ARGV[1]
local now = tonumber(ARGV[2])
local since = now - tonumber(ARGV[4])
drop_expired(KEYS, now, ARGV[6], tonumber(ARGV[7]))
local th = threshold_of(KEYS[4], ARGV[3], '0')
local eid, untl = epoch_peek(KEYS[8], now)

local sc = redis.call('ZSCORE', KEYS[1], uid)
local reply
if sc then
  if ARGV[8] ~= '1' then heartbeat(KEYS[1], uid, tonumber(sc), now) end
  reply = view('queued', 0, redis.call('ZRANK', KEYS[1], uid), KEYS, th, since, 0, '', eid, untl)
else
  local exp = redis.call('ZSCORE', KEYS[2], uid)
  if exp then
    reply = view('active', 0, 0, KEYS, th, since, seen(KEYS, uid, tonumber(exp), now, tonumber(ARGV[5])), '', eid, untl)
  else
    local served = redis.call('HGET', KEYS[9], uid)
    local done = ''
    if served then done = done_reason(served, now) end
    reply = view('', 0, 0, KEYS, th, since, 0, '', eid, untl, done)
  end
end
reply[14] = 0
reply[15], reply[16] = line_place(KEYS, reply[1], uid)
return reply
