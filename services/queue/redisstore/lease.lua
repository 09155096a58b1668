-- lease.lua: take or renew a cluster-wide duty's lease.
--
-- KEYS[1] -> queue:lease:<duty>  STRING the holder's id
-- ARGV[1] -> the caller's id
-- ARGV[2] -> lease ms
--
-- The caller gets the lease when nobody holds it, and keeps it (renewed
-- for ARGV[2]) while it holds it. Returns 1 when the caller holds the
-- lease afterwards, else 0.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
