-- unlock.lua: release a lock only if the caller still owns it.
--
-- KEYS[1] -> admission:lock:{E}  STRING owner
-- ARGV[1] -> owner
--
-- Returns 1 when released, 0 when the lock was gone or held by someone else.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
