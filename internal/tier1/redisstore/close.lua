-- close.lua: close a sale's pre-queue for good.
--
-- KEYS[1] -> {E}:sale  HASH the sale
-- ARGV[1] -> now, unix ms
--
-- Returns -1 when there is no sale, 0 when the list was already closed, 1
-- for the call that closed it.
local closed = redis.call('HGET', KEYS[1], 'closed')
if not closed then
  return -1
end
if closed == '1' then
  return 0
end
redis.call('HSET', KEYS[1], 'closed', '1', 'closedat', ARGV[1])
return 1
