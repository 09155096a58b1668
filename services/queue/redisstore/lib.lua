-- lib.lua is prepended to every per-event script (see scripts.go). It holds
-- the helpers they share; it has no contract of its own.

-- A line's score carries each waiter's heartbeat, so that no second
-- per-user set is needed (it doubled the memory per waiter): score = base ×
-- HB_TICKS + tick, where base is the Tier 1 position or arrival ms (the
-- order) and tick is the heartbeat time in HB_TICK_MS units, modulo
-- HB_TICKS. Scores stay exact integers below 2^53 for bases below 2^43
-- (queue.MaxLineBase). See docs/tier2-store.md, "Heartbeats in the score".
local HB_TICK_MS = 5000
local HB_TICKS = 1024

local function hb_tick(now)
  return math.floor(now / HB_TICK_MS) % HB_TICKS
end

-- line_score is the score of a waiter with base heard from at now.
local function line_score(base, now)
  return tonumber(base) * HB_TICKS + hb_tick(now)
end

-- heartbeat moves uid's tick to now's, keeping its base (score is its
-- current score); it writes only when the tick changed.
local function heartbeat(queue, uid, score, now)
  local s = score - score % HB_TICKS + hb_tick(now)
  if s ~= score then redis.call('ZADD', queue, 'XX', s, uid) end
end

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

-- first_admission_since is the ms of the earliest admission after since
-- (exclusive), or 0 when there is none: the start of the span the rate is
-- measured over, which is shorter than the window while a sale (or the
-- store, after a loss) is younger than it.
local function first_admission_since(admissions, since)
  local first = redis.call('ZRANGEBYSCORE', admissions, '(' .. since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #first == 2 then return tonumber(first[2]) end
  return 0
end

-- record_admission notes uid's admission at now for the rate window and for
-- the rankings, and trims the rate window.
local function record_admission(admissions, rank_pending, uid, now, since)
  redis.call('ZADD', admissions, now, now .. ':' .. uid)
  redis.call('ZREMRANGEBYSCORE', admissions, '-inf', since)
  redis.call('HINCRBY', rank_pending, math.floor(now / 1000), 1)
end

-- epoch_of finds or starts the event's epoch ({E}:epoch HASH id, born ms,
-- until ms). A missing hash means the event is new or its state was lost:
-- when the caller had seen an epoch (known ~= ''), it was lost, and a
-- recovery window of window ms starts now. A caller that had seen another
-- epoch than the one found learns of a loss someone else noticed first; if
-- that someone had never seen the old epoch (a fresh instance) and started
-- no window, the window is started from the new epoch's birth.
-- Returns id, until (ms; 0 or past when no window runs).
-- A caller without a candidate (candidate nil or '') only reads.
local function epoch_of(key, known, candidate, now, window)
  known, window = known or '', tonumber(window) or 0
  local cur = redis.call('HMGET', key, 'id', 'born', 'until')
  local id, born, untl = cur[1], tonumber(cur[2]), tonumber(cur[3])
  if not id and (candidate == nil or candidate == '') then return '', 0 end
  if not id then
    untl = 0
    if known ~= '' then untl = now + window end
    redis.call('HSET', key, 'id', candidate, 'born', now, 'until', untl)
    return candidate, untl
  end
  if known ~= '' and known ~= id and untl < born + window then
    untl = born + window
    redis.call('HSET', key, 'until', untl)
  end
  return id, untl
end

-- epoch_peek reads the epoch without starting one: id ('' when none), until.
local function epoch_peek(key)
  local cur = redis.call('HMGET', key, 'id', 'until')
  return cur[1] or '', tonumber(cur[2]) or 0
end

-- claimed is the expiry of uid, active until exp: a user put back after a
-- loss (restore.lua) holds its slot only until the recovery window ends,
-- since it may have left before the loss; showing up gives it the slot's
-- full end.
local function claimed(active, restored, uid, exp)
  local full = redis.call('HGET', restored, uid)
  if not full then return exp end
  redis.call('ZADD', active, full, uid)
  redis.call('HDEL', restored, uid)
  return tonumber(full)
end

-- view is the reply every user-facing script returns:
-- {status, activated, rank, queue size, active count, threshold,
--  admitted in window, expires ms, relist token or "", epoch id or "",
--  recovering until ms, first admission in window ms or 0}. Only a queued
-- user's estimate needs the first admission, so other replies skip it.
local function view(status, activated, rank, keys, th, since, expires, relist, eid, untl)
  local first = 0
  if status == 'queued' then first = first_admission_since(keys[5], since) end
  return {status, activated, rank, redis.call('ZCARD', keys[1]), redis.call('ZCARD', keys[2]),
    th, admitted_since(keys[5], since), expires, relist, eid, untl, first}
end
