-- keys-from-argv.lua: an example of a script that is not cluster-safe. Only
-- the counter is passed in KEYS; the buyers set and the order record are
-- named inside the script from ARGV, so Redis Cluster cannot route them
-- (they may live on another node, and nothing shares the counter's slot).
--
-- KEYS: 1 counter
-- ARGV: 1 activity  2 user  3 reservation
-- Returns 1 reserved, 0 sold out, 2 already bought.

local buyers = "buyers:" .. ARGV[1]
if redis.call("SISMEMBER", buyers, ARGV[2]) == 1 then
    return 2
end
if tonumber(redis.call("GET", KEYS[1]) or "0") <= 0 then
    return 0
end
redis.call("DECR", KEYS[1])
redis.call("SADD", buyers, ARGV[2])
redis.call("SET", "order:" .. ARGV[3], ARGV[2])
return 1
