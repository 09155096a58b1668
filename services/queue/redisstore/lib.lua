-- lib.lua is prepended to every per-event script (see scripts.go). It holds
-- the helpers they share; it has no contract of its own.

-- drop_expired removes actives whose expiry (score) is at or before now.
local function drop_expired(active, now)
  redis.call('ZREMRANGEBYSCORE', active, '-inf', now)
end

-- threshold_of is the event's threshold: the caller's value when fixed is
-- '1' (events configured in the durable ConfigStore, so a lost key changes
-- nothing), else the override kept in key, else the default.
local function threshold_of(key, default, fixed)
  if fixed == '1' then return tonumber(default) end
  local v = redis.call('GET', key)
  if v then
    local n = tonumber(v)
    if n then return n end
  end
  return tonumber(default)
end

-- admitted_since counts admissions after since (exclusive).
local function admitted_since(admissions, since)
  return redis.call('ZCOUNT', admissions, '(' .. since, '+inf')
end

-- record_admission notes uid's admission at now for the rate window and for
-- the rankings, and trims the rate window.
local function record_admission(admissions, rank_pending, uid, now, since)
  redis.call('ZADD', admissions, now, now .. ':' .. uid)
  redis.call('ZREMRANGEBYSCORE', admissions, '-inf', since)
  redis.call('HINCRBY', rank_pending, math.floor(now / 1000), 1)
end

-- view is the reply every user-facing script returns:
-- {status, activated, rank, queue size, active count, threshold,
--  admitted in window, expires ms, relist token or ""}.
local function view(status, activated, rank, keys, th, since, expires, relist)
  return {status, activated, rank, redis.call('ZCARD', keys[1]), redis.call('ZCARD', keys[2]),
    th, admitted_since(keys[5], since), expires, relist}
end
