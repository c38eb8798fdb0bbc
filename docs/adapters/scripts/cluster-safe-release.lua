-- cluster-safe-release.lua: gives one reservation of cluster-safe.lua back,
-- at most once.
--
-- KEYS: 1 stock hash  2 buyers set  3 hold:<reservation>
-- ARGV: 1 user
-- Returns 0 released, 1 already released, 2 no such reservation,
-- 5 the reservation is another user's.

local holder = redis.call("GET", KEYS[3])
if not holder then
    return 2
end
if holder == "released:" .. ARGV[1] then
    return 1
end
if holder ~= ARGV[1] then
    return 5
end
redis.call("SET", KEYS[3], "released:" .. ARGV[1], "KEEPTTL")
redis.call("SREM", KEYS[2], ARGV[1])
redis.call("HINCRBY", KEYS[1], "held", -1)
redis.call("HINCRBY", KEYS[1], "available", 1)
return 0
