-- compensate.lua: give one reservation's unit back to its bucket, at most once.
--
-- KEYS: 1 stock  2 user:<user_id>  3 resv:<reservation_id>  4 send_pending
--       5 reservation_expiry  6 soldout
-- ARGV: 1 reservation_id  2 release_reason  3 now_ms_override (0 = Redis TIME)
-- Returns {rc, available, marker_deleted, status}:
--   0 RELEASED, 1 ALREADY_RELEASED, 2 NOT_FOUND, 3 NOT_COMPENSATABLE,
--   4 INVARIANT_VIOLATION, 5 RESERVATION_ID_CONFLICT.
-- Only REJECTED or RELEASE_PENDING may be released: SEND_UNKNOWN and ENQUEUED
-- may still become an order, so they must be fenced (-> RELEASE_PENDING) first.
-- The user marker is deleted only while it still points at this reservation.

local RELEASED, ALREADY_RELEASED, NOT_FOUND, NOT_COMPENSATABLE = 0, 1, 2, 3
local INVARIANT_VIOLATION, RESERVATION_ID_CONFLICT = 4, 5

local reservation_id = ARGV[1]
local reason = ARGV[2] or ""
local now_ms = tonumber(ARGV[3] or "0") or 0

local function available_now()
    return tonumber(redis.call("HGET", KEYS[1], "available") or "-1") or -1
end

-- A missing record is never "released anyway": stock is not touched.
if redis.call("EXISTS", KEYS[3]) == 0 then
    return { NOT_FOUND, -1, 0, "NOT_FOUND" }
end

local r = redis.call("HMGET", KEYS[3], "reservation_id", "status")
if r[1] ~= reservation_id then
    return { RESERVATION_ID_CONFLICT, -1, 0, "RESERVATION_ID_CONFLICT" }
end
local status = r[2] or ""

if status == "RELEASED" then
    return { ALREADY_RELEASED, available_now(), 0, "RELEASED" }
end
if status ~= "REJECTED" and status ~= "RELEASE_PENDING" then
    return { NOT_COMPENSATABLE, available_now(), 0, status }
end

local s = redis.call("HMGET", KEYS[1], "initial", "available", "reserved")
local initial, available, reserved = tonumber(s[1]), tonumber(s[2]), tonumber(s[3])
if not initial or not available or not reserved
    or initial < 0 or available < 0 or reserved <= 0
    or available + reserved ~= initial then
    return { INVARIANT_VIOLATION, available or -1, 0, "STOCK_INVARIANT_VIOLATION" }
end

if now_ms <= 0 then
    local t = redis.call("TIME")
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

redis.call("HSET", KEYS[3], "status", "RELEASED", "release_reason", reason,
    "released_at_ms", now_ms, "updated_at_ms", now_ms)
local new_available = redis.call("HINCRBY", KEYS[1], "available", 1)
redis.call("HINCRBY", KEYS[1], "reserved", -1)
redis.call("HINCRBY", KEYS[1], "released_total", 1)

local marker_deleted = 0
if redis.call("GET", KEYS[2]) == reservation_id then
    marker_deleted = redis.call("DEL", KEYS[2])
end
redis.call("ZREM", KEYS[4], reservation_id)
redis.call("ZREM", KEYS[5], reservation_id)
-- The bucket can sell again: the sold-out flag no longer holds.
redis.call("DEL", KEYS[6])

return { RELEASED, new_available, marker_deleted, "RELEASED" }
