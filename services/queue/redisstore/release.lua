-- release.lua: delete a key only if it still holds the caller's token
-- (compare-and-delete). It releases the admission lock.
--
-- KEYS[1] -> admission:lock:{E} (STRING owner)
-- ARGV[1] -> the token the caller holds
--
-- Returns 1 when deleted, 0 when the key was gone or held another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
