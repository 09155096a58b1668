-- cleanup.lua: one page of the stale sweep over an event's line.
--
-- KEYS[1..14] -> as in check.lua (queue, active, swept, threshold,
--                admissions, rank-pending, retired, epoch, served, unlogged,
--                header, listed, changes, line)
-- ARGV[1] -> now, unix ms
-- ARGV[2] -> seen TTL ms: waiters silent at least this long are dropped
-- ARGV[3] -> where the page starts: '-inf' for the first page, else '('
--            followed by the last score of the page before
-- ARGV[4] -> page size
--
-- Heartbeats live in the line's scores as ticks (lib.lua). A waiter whose
-- tick is n ticks old was last heard at least (n - 1) ticks ago, so it is
-- dropped when n - 1 ticks cover the TTL: never early, at most one tick
-- late. The sweep records in KEYS[3] the oldest heartbeat it kept, for the
-- stats: 'scan' while it runs, 'oldest' (tick start ms, or absent for an
-- empty line) once a page comes back short.
--
-- Each removal goes to the line's change log, with the user id.
-- Returns {removed, examined, last score of the page ('' when empty)}; the
-- caller asks for the next page while examined equals the page size.
local now = tonumber(ARGV[1])
local stale_ticks = math.ceil(tonumber(ARGV[2]) / HB_TICK_MS) + 1
local cur = hb_tick(now)
local page = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[3], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local oldest = -1
if ARGV[3] ~= '-inf' then oldest = tonumber(redis.call('HGET', KEYS[3], 'scan')) or -1 end
local removed, last = 0, ''
for i = 1, #page, 2 do
  local uid, raw = page[i], page[i + 1]
  local age = (cur - tonumber(raw) % HB_TICKS) % HB_TICKS
  if age >= stale_ticks then
    redis.call('ZREM', KEYS[1], uid)
    redis.call('SREM', KEYS[11], uid)
    log_change(KEYS, 'S' .. math.floor(tonumber(raw) / HB_TICKS) .. ':' .. uid)
    removed = removed + 1
  elseif age > oldest then
    oldest = age
  end
  last = raw
end
local examined = #page / 2
if examined < tonumber(ARGV[4]) then
  redis.call('HDEL', KEYS[3], 'scan')
  if oldest >= 0 then
    redis.call('HSET', KEYS[3], 'oldest', (math.floor(now / HB_TICK_MS) - oldest) * HB_TICK_MS)
  else
    redis.call('HDEL', KEYS[3], 'oldest')
  end
else
  redis.call('HSET', KEYS[3], 'scan', oldest)
end
return {removed, examined, last}
