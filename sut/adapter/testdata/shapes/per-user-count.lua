-- per-user-count.lua: a per-user count key read with GET and compared
-- with a number. GET answers a string, so the comparison on line 11 is a
-- Lua error, reached only by a user's second request while stock remains
-- (a sold-out bucket answers first).
-- KEYS: 1 stock hash  2 count:<user>  3 hold:<reservation>
-- ARGV: 1 user  2 reservation  3 retention_until_ms
local user, reservation, keep_until = ARGV[1], ARGV[2], ARGV[3]
local available = tonumber(redis.call("HGET", KEYS[1], "available") or "0")
if available <= 0 then return 0 end
local bought = redis.call("GET", KEYS[2])
if bought and bought >= 1 then
    return 2
end
redis.call("HINCRBY", KEYS[1], "available", -1)
redis.call("HINCRBY", KEYS[1], "held", 1)
redis.call("INCR", KEYS[2])
redis.call("PEXPIREAT", KEYS[2], keep_until)
redis.call("SET", KEYS[3], user, "PXAT", keep_until)
return 1
