-- decr-restore.lua: decr-first.lua done right: a result below 0 gives
-- the unit back (INCR) before answering SOLD_OUT, in the same script, so
-- no reader ever sees the counter below 0.
--
-- KEYS: 1 counter  2 user marker
-- ARGV: 1 retention_until_ms
if redis.call("EXISTS", KEYS[2]) == 1 then
    return 2
end
local left = redis.call("DECR", KEYS[1])
if left < 0 then
    redis.call("INCR", KEYS[1])
    return 0
end
redis.call("SET", KEYS[2], "1", "PXAT", ARGV[1])
return 1
