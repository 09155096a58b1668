-- replay.lua: rebuild an event's served record and active set after a loss
-- of its state, from the durable ledger or from the admissions the calling
-- instance made and nobody had claimed yet (queue.Store.Replay).
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> now, unix ms
-- ARGV[2] -> the epoch id whose replay this call completes, or '' when more
--            is to come (or this is not the ledger's replay)
-- ARGV[3] -> '1' with the durable ledger on (as ARGV[14] of check.lua)
-- ARGV[4] -> how long the served record outlives its last change, ms
-- ARGV[5] -> rebuild grace ms: while the ledger's replay is pending the
--            window lasts at least until now + this, and the replay that
--            ends it moves the window's end there if it was sooner, so the
--            line, asked to come back while the replay was pending, forms
--            again before anyone is admitted
-- ARGV[2k+4], ARGV[2k+5] -> user id, served value, for k = 1, 2, … in the
--                           order they were recorded
--
-- Only while the recovery window runs or the replay is pending (nobody new
-- is admitted then, so no slot has been handed out again); slots come back
-- held until the window's end (as the grace may move it). Each entry
-- replaces the user's served value, except that a value written since the
-- loss (with the ledger on: one still in KEYS[10]; without: any) is newer
-- and stays, unless the entry says the user is gone. Then:
--   - gone (left, or freed after the idle limit): out of active (counted
--     back before the replay), and, for a pass, out of the line (came
--     back to queue again);
--   - slot running past now, not active: back into active, out of the line
--     (an admission nobody had claimed yet, or a holder). The instance
--     cannot know whether the user is still there, so the slot is held
--     only until the window ends; showing up claims the slot's full end
--     (lib.lua seen);
--   - slot over: for a pass, out of the line (a holder who came back).
-- With ARGV[2] set and still the event's epoch, the replay is done.
-- Removals from the line are logged as 'X' (lib.lua log_change).
-- Returns how many users it put back into active.
local now = tonumber(ARGV[1])
local cur = redis.call('HMGET', KEYS[8], 'until', 'replay')
local raw = tonumber(cur[1]) or 0
local untl = raw
if cur[2] == '1' then untl = math.max(raw, now + tonumber(ARGV[5])) end
if now >= untl then return 0 end
local n, moved = 0, false
for i = 6, #ARGV - 1, 2 do
  local uid, v = ARGV[i], ARGV[i + 1]
  local cur = redis.call('HGET', KEYS[9], uid)
  local fresh = cur and (ARGV[3] ~= '1' or redis.call('HEXISTS', KEYS[10], uid) == 1)
  if fresh and not (is_gone(v) and not is_gone(cur)) then v = nil end
  if v then
    redis.call('HSET', KEYS[9], uid, v)
    local pass = string.sub(v, 1, 1) == 'p'
    local slot = slot_of(v)
    if is_gone(v) then
      redis.call('ZREM', KEYS[2], uid)
      if pass and redis.call('ZREM', KEYS[1], uid) == 1 then moved = true end
    elseif slot > now then
      if not redis.call('ZSCORE', KEYS[2], uid) then
        redis.call('ZADD', KEYS[2], math.min(slot, untl), uid)
        if redis.call('ZREM', KEYS[1], uid) == 1 then moved = true end
        redis.call('SREM', KEYS[11], uid)
        n = n + 1
      end
    elseif pass and redis.call('ZREM', KEYS[1], uid) == 1 then
      moved = true
    end
  end
end
redis.call('PEXPIRE', KEYS[9], tonumber(ARGV[4]))
-- Waiters taken out of the line here are logged as one 'X': instances
-- forget what they remembered of the line and ask the store again.
if moved then log_change(KEYS, 'X') end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[8], 'id') == ARGV[2] then
  redis.call('HDEL', KEYS[8], 'replay')
  if raw < untl then redis.call('HSET', KEYS[8], 'until', untl) end
end
return n
