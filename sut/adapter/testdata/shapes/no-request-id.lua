-- no-request-id.lua: one per user by a bought set, no request id at all:
-- a re-sent request is answered "already bought" instead of its first
-- answer. Every key in KEYS, every key with an absolute expiry.
-- KEYS: 1 stock hash  2 bought set  3 hold:<reservation>
-- ARGV: 1 user  2 reservation  3 retention_until_ms
local user, reservation, keep_until = ARGV[1], ARGV[2], ARGV[3]
if redis.call("SISMEMBER", KEYS[2], user) == 1 then
    return { 2, "" }
end
local available = tonumber(redis.call("HGET", KEYS[1], "available") or "0")
if available <= 0 then
    return { 0, "" }
end
redis.call("HINCRBY", KEYS[1], "available", -1)
redis.call("HINCRBY", KEYS[1], "held", 1)
redis.call("SADD", KEYS[2], user)
redis.call("PEXPIREAT", KEYS[2], keep_until)
redis.call("SET", KEYS[3], user, "PXAT", keep_until)
return { 1, reservation }
