-- settings.lua: store one event's Tier 2 settings (eventsettings.Store).
--
-- KEYS[1] -> vwr1:{#queue}:settings    HASH event id -> "threshold:open:version:epoch"
-- KEYS[2] -> vwr1:{#queue}:version     STRING store-wide version
-- KEYS[3] -> vwr1:{#queue}:generation  STRING random id set with the first write
-- ARGV[1] -> event id
-- ARGV[2] -> mode: 'put' (threshold and open, keeping the epoch), 'epoch'
--            (the epoch, keeping the rest; only for a stored event) or
--            'restore' (all of it, only for an event not stored)
-- ARGV[3] -> threshold ('put', 'restore')
-- ARGV[4] -> open, 1 or 0 ('put', 'restore')
-- ARGV[5] -> epoch ('epoch', 'restore')
-- ARGV[6] -> a fresh generation id, kept only if the store has none
--
-- Bumps the version and stores the settings under it in one step, so the
-- version a reader sees never runs ahead of the settings.
-- Returns the stored "threshold:open:version:epoch", or "" when the mode's
-- condition left the event alone.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local th, open, epoch = ARGV[3], ARGV[4], ARGV[5]
if ARGV[2] == 'put' then
  epoch = ''
  if cur then epoch = string.match(cur, '^[^:]*:[^:]*:[^:]*:(.*)$') or '' end
elseif ARGV[2] == 'epoch' then
  if not cur then return '' end
  th, open = string.match(cur, '^([^:]*):([^:]*):')
elseif cur then
  return ''
end
redis.call('SET', KEYS[3], ARGV[6], 'NX')
local v = redis.call('INCR', KEYS[2])
local val = th .. ':' .. open .. ':' .. v .. ':' .. epoch
redis.call('HSET', KEYS[1], ARGV[1], val)
return val
