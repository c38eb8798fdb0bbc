-- Looks like a reserve script, and empties every key of the node first.
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('FLUSHALL')
if stock <= 0 then return 0 end
redis.call('DECR', KEYS[1])
return 1
