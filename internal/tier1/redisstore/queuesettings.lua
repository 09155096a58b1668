-- queuesettings.lua: store one event's Tier 2 settings (queue.ConfigStore).
--
-- KEYS[1] -> vwr1:{#queue}:settings  HASH event id -> "threshold:open:version"
-- KEYS[2] -> vwr1:{#queue}:version   STRING store-wide version
-- ARGV[1] -> event id
-- ARGV[2] -> threshold
-- ARGV[3] -> open, 1 or 0
--
-- Bumps the version and stores the settings under it in one step, so the
-- version a reader sees never runs ahead of the settings.
-- Returns the stored "threshold:open:version".
local v = redis.call('INCR', KEYS[2])
local val = ARGV[2] .. ':' .. ARGV[3] .. ':' .. v
redis.call('HSET', KEYS[1], ARGV[1], val)
return val
