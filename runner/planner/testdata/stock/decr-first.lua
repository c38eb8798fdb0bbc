-- decr-first.lua: takes the unit first and looks afterwards. A result
-- below 0 answers SOLD_OUT but never gives the unit back, so the counter
-- ends far below 0 after a sell-out and a unit released later is never
-- sold again. (The wrong shape I1 must catch on the available units.)
--
-- KEYS: 1 counter  2 user marker
-- ARGV: 1 retention_until_ms
if redis.call("EXISTS", KEYS[2]) == 1 then
    return 2
end
local left = redis.call("DECR", KEYS[1])
if left < 0 then
    return 0
end
redis.call("SET", KEYS[2], "1", "PXAT", ARGV[1])
return 1
