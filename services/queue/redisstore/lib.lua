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
-- until ms, replay). A missing hash means the event is new or its state was
-- lost: when the caller had seen an epoch (known ~= ''), it was lost, and a
-- recovery window of window ms starts now; with the durable ledger on
-- (ledger == '1') the epoch also awaits the ledger's replay (replay = 1,
-- cleared by replay.lua) before anyone new is admitted. A caller that had
-- seen another epoch than the one found learns of a loss someone else
-- noticed first; if that someone had no memory of the old epoch and started
-- no window, the window is started from the new epoch's birth (and the
-- replay awaited).
-- Returns id, until (ms; 0 or past when no window runs), and whether the
-- replay is pending. While it is, until is at least a second after now:
-- nobody new is admitted. A caller without a candidate (candidate nil or
-- '') only reads.
local function epoch_of(key, known, candidate, now, window, ledger)
  known, window = known or '', tonumber(window) or 0
  local cur = redis.call('HMGET', key, 'id', 'born', 'until', 'replay')
  local id, born, untl, replay = cur[1], tonumber(cur[2]), tonumber(cur[3]), cur[4]
  if not id and (candidate == nil or candidate == '') then return '', 0, false end
  if not id then
    untl, replay = 0, nil
    if known ~= '' then untl = now + window end
    redis.call('HSET', key, 'id', candidate, 'born', now, 'until', untl)
    if known ~= '' and ledger == '1' then
      redis.call('HSET', key, 'replay', 1)
      replay = '1'
    end
    id = candidate
  elseif known ~= '' and known ~= id and untl < born + window then
    untl = born + window
    redis.call('HSET', key, 'until', untl)
    if ledger == '1' then
      redis.call('HSET', key, 'replay', 1)
      replay = '1'
    end
  end
  if replay == '1' then untl = math.max(untl, now + 1000) end
  return id, untl, replay == '1'
end

-- epoch_peek reads the epoch without starting one: id ('' when none), until
-- (held past now while a replay is pending, as in epoch_of).
local function epoch_peek(key, now)
  local cur = redis.call('HMGET', key, 'id', 'until', 'replay')
  local untl = tonumber(cur[2]) or 0
  if cur[3] == '1' then untl = math.max(untl, now + 1000) end
  return cur[1] or '', untl
end

-- The served record ({E}:served HASH uid -> value, see queue.Served.Value):
-- 'p' (came with a Tier 1 pass) or 'h' (named by a trusted header), then
-- the slot's end ms, 'L' once the user left, or 'I' once the idle limit
-- freed their slot.

-- slot_of is the slot end ms of a served value, or nil (none, left, or
-- freed idle).
local function slot_of(v)
  if not v then return nil end
  return tonumber(string.sub(v, 2))
end

local function is_left(v) return v ~= nil and v ~= false and string.sub(v, 2) == 'L' end

-- is_gone: the user left, or their slot was freed after the idle limit
-- ('I'); either way the slot is over before its end, for good.
local function is_gone(v) return is_left(v) or (v ~= nil and v ~= false and string.sub(v, 2) == 'I') end

-- done_reason says why a served user holds no slot (queue.Done*).
local function done_reason(v, now)
  if is_left(v) then return 'left' end
  local slot = slot_of(v)
  if slot and slot <= now then return 'slot_ended' end
  return 'idle'
end

-- note_served records uid's served value, queues it for the durable ledger
-- ({E}:unlogged) when ledger is '1', and keeps the record for retain ms
-- after its last change.
local function note_served(keys, uid, v, ledger, retain)
  redis.call('HSET', keys[9], uid, v)
  redis.call('PEXPIRE', keys[9], retain)
  if ledger == '1' then redis.call('HSET', keys[10], uid, v) end
end

-- drop_expired frees the slots whose free-at (score: the slot's end, or
-- sooner when the holder stopped showing up, see seen) is at or before now.
-- A slot freed before its end was freed by the idle limit: that is noted as
-- served ('I', also for the ledger), so that no replay after a loss hands
-- it back to a holder who had walked away while someone else holds it.
local function drop_expired(keys, now, ledger, retain)
  local gone = redis.call('ZRANGEBYSCORE', keys[2], '-inf', now)
  if #gone == 0 then return end
  redis.call('ZREMRANGEBYSCORE', keys[2], '-inf', now)
  for _, uid in ipairs(gone) do
    local v = redis.call('HGET', keys[9], uid)
    local slot = slot_of(v)
    if slot and slot > now then note_served(keys, uid, string.sub(v, 1, 1) .. 'I', ledger, retain) end
  end
end

-- activate lets uid in with a slot ending at slot_end, held for grace ms
-- at most until they show up (see seen), and records it as served.
local function activate(keys, uid, kind, now, slot_end, grace, ledger, retain)
  redis.call('ZADD', keys[2], math.min(slot_end, now + grace), uid)
  note_served(keys, uid, kind .. slot_end, ledger, retain)
end

-- seen is an active user showing up (a check or a heartbeat) at now: the
-- slot is then held until min(slot end, now + idle), so that a holder who
-- stops showing up frees it after the idle limit; score is their current
-- free-at. It writes only when that moves by a second or more. A user put
-- back after a loss (replay.lua) claims the slot's full end this way.
-- Returns the slot's end.
local function seen(keys, uid, score, now, idle)
  local slot = slot_of(redis.call('HGET', keys[9], uid)) or score
  local f = math.min(slot, now + idle)
  if f >= score + 1000 then redis.call('ZADD', keys[2], 'XX', f, uid) end
  return slot
end

-- view is the reply every user-facing script returns:
-- {status, activated, rank, queue size, active count, threshold,
--  admitted in window, expires ms, relist token or "", epoch id or "",
--  recovering until ms, first admission in window ms or 0, done reason or
--  ""}. Only a queued user's estimate needs the first admission, so other
-- replies skip it.
local function view(status, activated, rank, keys, th, since, expires, relist, eid, untl, done)
  local first = 0
  if status == 'queued' then first = first_admission_since(keys[5], since) end
  return {status, activated, rank, redis.call('ZCARD', keys[1]), redis.call('ZCARD', keys[2]),
    th, admitted_since(keys[5], since), expires, relist, eid, untl, first, done or ''}
end

-- The line's change log: every step that changes who is in the line
-- (a join, an admission batch, a leave, a sweep's removal, a replay)
-- appends one entry to KEYS[13] ({E}:changes, a LIST, newest last) and
-- counts it in KEYS[14] ({E}:line HASH seq), so that an instance can
-- answer a queued user's later polls from what it remembers (their rank
-- then, plus the changes ahead of them since) and read the log once per
-- snapshot interval instead (lines.lua). Entries: 'J<base>' joined,
-- 'A<n>:<highest base>' n let in from the head, 'L<base>:<uid>' left,
-- 'S<base>:<uid>' swept, 'X' anything else (forget the line). The list
-- keeps the last LOG_CAP entries and expires LOG_TTL_MS after its last
-- entry; a reader whose place fell off it forgets the line. The count,
-- its generation (gen) and the admitted-through frontier (front) are kept.
local LOG_CAP = 10000
local LOG_TTL_MS = 600000

local function log_change(keys, entry)
  local seq = redis.call('HINCRBY', keys[14], 'seq', 1)
  if seq == 1 then
    -- A count that starts (again: the hash was lost, evicted or deleted
    -- while the epoch stayed) gets a generation of its own, so that a
    -- reader whose cursor is from another count forgets the line instead
    -- of reading this count's entries as the ones after its cursor.
    local t = redis.call('TIME')
    redis.call('HSET', keys[14], 'gen', t[1] .. '.' .. t[2])
  end
  if redis.call('RPUSH', keys[13], entry) > LOG_CAP + 100 then
    redis.call('LTRIM', keys[13], -LOG_CAP, -1)
  end
  redis.call('PEXPIRE', keys[13], LOG_TTL_MS)
  return seq
end

-- line_place is, for a queued user, the line's change count as of now and
-- the user's base; {0, 0} for anyone else.
local function line_place(keys, status, uid)
  if status ~= 'queued' then return 0, 0 end
  local sc = redis.call('ZSCORE', keys[1], uid)
  if not sc then return 0, 0 end
  return tonumber(redis.call('HGET', keys[14], 'seq')) or 0, math.floor(tonumber(sc) / HB_TICKS)
end
