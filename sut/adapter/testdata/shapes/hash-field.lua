-- hash-field.lua: one sale hash holds the stock and one field per buyer;
-- the buyer's field name is passed as KEYS[2] (it is no key: the script
-- uses it as a hash field). Idempotent by request id.
-- KEYS: 1 sale hash (available, held, <buyer fields>)  2 the buyer's field
--       3 req:<request>  4 hold:<reservation>
-- ARGV: 1 user  2 reservation  3 retention_until_ms
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
if redis.call("HEXISTS", KEYS[1], KEYS[2]) == 1 then
    return answer(2, "")
end
local available = tonumber(redis.call("HGET", KEYS[1], "available") or "0")
if available <= 0 then
    return answer(0, "")
end
redis.call("HINCRBY", KEYS[1], "available", -1)
redis.call("HINCRBY", KEYS[1], "held", 1)
redis.call("HSET", KEYS[1], KEYS[2], reservation)
redis.call("SET", KEYS[4], user, "PXAT", keep_until)
return answer(1, reservation)
