-- lines.lua: what an instance needs to answer queued users' polls of an
-- event from memory (queue.Store.LineStates): the line's changes since the
-- instance's cursor and the counters a queued answer shows. Reads only.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> the instance's cursor: the last change it has read (-1: none
--            yet, send no entries)
-- ARGV[2] -> now, unix ms
-- ARGV[3] -> default threshold
-- ARGV[4] -> '1': ARGV[3] is the event's threshold (as ARGV[7] of check.lua)
-- ARGV[5] -> rate window ms
-- ARGV[6] -> most entries to send; more than that is a gap
--
-- Returns {seq (changes logged so far), gap (1 when the entries after the
-- cursor are no longer all in the log, or more than ARGV[6]; the cursor is
-- ahead of seq too), front (highest base admitted, -1 when none), queue
-- size, unexpired active count, threshold, admissions in window, first
-- admission in window ms or 0, epoch id or '', recovering until ms (held
-- past now while the ledger's replay is pending), the count's generation
-- ('' before its first change; another one when the count started again,
-- lib.lua log_change), the entry at the cursor ('' when the cursor is 0,
-- ahead, or no longer in the log), then the entries after the cursor,
-- oldest first}.
local since, now = tonumber(ARGV[1]), tonumber(ARGV[2])
local meta = redis.call('HMGET', KEYS[14], 'seq', 'front', 'gen')
local seq, front, gen = tonumber(meta[1]) or 0, tonumber(meta[2]) or -1, meta[3] or ''
local gap, entries = 0, {}
if since >= 0 and since ~= seq then
  local want = seq - since
  if want < 0 or want > tonumber(ARGV[6]) or redis.call('LLEN', KEYS[13]) < want then
    gap = 1
  else
    entries = redis.call('LRANGE', KEYS[13], -want, -1)
  end
end
-- The entry at the cursor, which the caller read last: if it is not the
-- one the caller has, the count went back and came forward again (a
-- failover to a replica that had not seen the last changes) and the
-- entries after the cursor are not the ones after the caller's.
local prev = ''
if since > 0 and gap == 0 then
  local back = seq - since + 1
  if redis.call('LLEN', KEYS[13]) >= back then prev = redis.call('LINDEX', KEYS[13], -back) or '' end
end
local w = now - tonumber(ARGV[5])
local eid, untl = epoch_peek(KEYS[8], now)
local reply = {seq, gap, front, redis.call('ZCARD', KEYS[1]), redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf'),
  threshold_of(KEYS[4], ARGV[3], ARGV[4]), admitted_since(KEYS[5], w), first_admission_since(KEYS[5], w), eid, untl, gen, prev}
for _, e in ipairs(entries) do reply[#reply + 1] = e end
return reply
