-- correct.lua: every key in KEYS under one hash tag, one unit per call,
-- one per user, idempotent by request id, every key with an absolute
-- expiry.
-- KEYS: 1 stock hash (available, held)  2 bought set  3 req:<request>
--       4 hold:<reservation>
-- ARGV: 1 user  2 reservation  3 retention_until_ms
-- Returns {code, reservation}: 1 reserved, 0 sold out, 2 already bought,
-- 3 the request id belongs to another user.
local user, reservation, keep_until = ARGV[1], ARGV[2], ARGV[3]
local first = redis.call("GET", KEYS[3])
if first then
    local owner, code, rid = string.match(first, "^(.-)|(%d+)|(.*)$")
    if owner ~= user then
        return { 3, "" }
    end
    return { tonumber(code), rid }
end
local function answer(code, rid)
    redis.call("SET", KEYS[3], user .. "|" .. code .. "|" .. rid, "PXAT", keep_until)
    return { code, rid }
end
if redis.call("SISMEMBER", KEYS[2], user) == 1 then
    return answer(2, "")
end
local available = tonumber(redis.call("HGET", KEYS[1], "available") or "0")
if available <= 0 then
    return answer(0, "")
end
redis.call("HINCRBY", KEYS[1], "available", -1)
redis.call("HINCRBY", KEYS[1], "held", 1)
redis.call("SADD", KEYS[2], user)
redis.call("PEXPIREAT", KEYS[2], keep_until)
redis.call("SET", KEYS[4], user, "PXAT", keep_until)
return answer(1, reservation)
