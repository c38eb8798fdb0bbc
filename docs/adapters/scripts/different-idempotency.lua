-- different-idempotency.lua: an example whose idempotency differs from the
-- harness's contract: a request id seen before is refused as a duplicate
-- (-1) instead of being answered with its first answer. A client that
-- re-sends after a lost reply is told "duplicate" and never learns that
-- its first send reserved a unit.
--
-- KEYS: 1 stock hash (available, held)  2 buyers set  3 seen:<request>
--       4 hold:<reservation>
-- ARGV: 1 user  2 retention_until_ms
-- Returns 1 reserved, 0 sold out, 2 already bought, -1 duplicate request.

if redis.call("SET", KEYS[3], "1", "NX", "PXAT", ARGV[2]) == false then
    return -1
end
if redis.call("SISMEMBER", KEYS[2], ARGV[1]) == 1 then
    return 2
end
if tonumber(redis.call("HGET", KEYS[1], "available") or "0") <= 0 then
    return 0
end
redis.call("HINCRBY", KEYS[1], "available", -1)
redis.call("HINCRBY", KEYS[1], "held", 1)
redis.call("SADD", KEYS[2], ARGV[1])
redis.call("PEXPIREAT", KEYS[2], ARGV[2])
redis.call("SET", KEYS[4], ARGV[1], "PXAT", ARGV[2])
return 1
