-- no-ttl-counters.lua: correct.lua's logic, but the counters it creates
-- (the bought set, the request results, the holds) never expire.
-- KEYS: 1 stock hash  2 bought set  3 req:<request>  4 hold:<reservation>
-- ARGV: 1 user  2 reservation
local user, reservation = ARGV[1], ARGV[2]
local first = redis.call("GET", KEYS[3])
if first then
    local owner, code, rid = string.match(first, "^(.-)|(%d+)|(.*)$")
    if owner ~= user then
        return { 3, "" }
    end
    return { tonumber(code), rid }
end
local function answer(code, rid)
    redis.call("SET", KEYS[3], user .. "|" .. code .. "|" .. rid)
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
redis.call("SET", KEYS[4], user)
return answer(1, reservation)
