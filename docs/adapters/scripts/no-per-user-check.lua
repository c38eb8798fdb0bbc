-- no-per-user-check.lua: an example of a script that checks the stock but
-- not the buyer: one user can buy as often as it asks. It answers the
-- stock before the decrement (a shape many scripts use): above 0 means
-- one unit was taken, 0 means sold out.
--
-- KEYS: 1 counter  2 order:<reservation>
-- ARGV: 1 user  2 retention_until_ms

local before = tonumber(redis.call("GET", KEYS[1]) or "0")
if before <= 0 then
    return 0
end
redis.call("DECR", KEYS[1])
redis.call("SET", KEYS[2], ARGV[1], "PXAT", ARGV[2])
return before
