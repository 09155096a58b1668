-- relisted.lua: mark an event listed once a check's SADD put it into the
-- active-events set (check.lua's relist token).
--
-- KEYS[1] -> {E}:retired  STRING tombstone token of a retire (retire.lua)
-- KEYS[2] -> {E}:listed   STRING "1" while the event is in the active set
-- ARGV[1] -> the relist token check.lua returned: a tombstone's token, or
--            "+" when there was no tombstone
--
-- It marks the event only if no retire began since the check read the
-- token (the tombstone is still the one it saw, or still absent), and
-- clears that tombstone. A retire that began meanwhile left a new token:
-- then it changes nothing, and the next check lists the event again.
-- Returns 1 when it marked the event, else 0.
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '+' then
  if cur then return 0 end
elseif cur ~= ARGV[1] then
  return 0
else
  redis.call('DEL', KEYS[1])
end
redis.call('SET', KEYS[2], '1')
return 1
