-- tag-only-keys.lua: KEYS[1] is only the sale's hash tag ("{...}"); the
-- script builds <tag>:stock, <tag>:bought and <tag>:req:<request> itself.
-- Same slot as KEYS[1], so Redis Cluster runs it; the declared key itself
-- never exists. Otherwise correct: one per user, idempotent by request
-- id, every key with an absolute expiry.
-- ARGV: 1 user  2 request  3 reservation  4 retention_until_ms
-- Returns {code, reservation}: 1 reserved, 0 sold out, 2 already bought,
-- 3 the request id belongs to another user.
local tag = KEYS[1]
local user, request, reservation, keep_until = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local stock, bought, req = tag .. ":stock", tag .. ":bought", tag .. ":req:" .. request
local first = redis.call("GET", req)
if first then
    local owner, code, rid = string.match(first, "^(.-)|(%d+)|(.*)$")
    if owner ~= user then
        return { 3, "" }
    end
    return { tonumber(code), rid }
end
local function answer(code, rid)
    redis.call("SET", req, user .. "|" .. code .. "|" .. rid, "PXAT", keep_until)
    return { code, rid }
end
if redis.call("SISMEMBER", bought, user) == 1 then
    return answer(2, "")
end
local available = tonumber(redis.call("HGET", stock, "available") or "0")
if available <= 0 then
    return answer(0, "")
end
redis.call("HINCRBY", stock, "available", -1)
redis.call("HINCRBY", stock, "held", 1)
redis.call("SADD", bought, user)
redis.call("PEXPIREAT", bought, keep_until)
redis.call("SET", tag .. ":hold:" .. reservation, user, "PXAT", keep_until)
return answer(1, reservation)
