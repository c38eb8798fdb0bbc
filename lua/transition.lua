-- transition.lua: compare-and-set of a reservation's status. Never touches stock:
-- releasing stock is compensate.lua's job alone (RELEASED is not a target here).
--
-- KEYS: 1 resv:<reservation_id>  2 send_pending  3 reservation_expiry
-- ARGV: 1 reservation_id  2 target  3 now_ms (0 = Redis TIME)  4 next_retry_at_ms
--       5 message_id  6 order_id  7 error_code  ("" = not given)
-- Returns {rc, previous_status, target}:
--   0 UPDATED, 1 IDEMPOTENT, 2 NOT_FOUND, 3 ILLEGAL_TRANSITION, 4 ID_CONFLICT.
-- Allowed: RESERVED -> SEND_UNKNOWN | ENQUEUED | RELEASE_PENDING
--          SEND_UNKNOWN -> ENQUEUED | RELEASE_PENDING
--          ENQUEUED -> ORDER_CREATED | REJECTED | RELEASE_PENDING
--          REJECTED -> RELEASE_PENDING

local UPDATED, IDEMPOTENT, NOT_FOUND, ILLEGAL_TRANSITION, ID_CONFLICT = 0, 1, 2, 3, 4

local reservation_id = ARGV[1]
local target = ARGV[2] or ""
local now_ms = tonumber(ARGV[3] or "0") or 0
local next_retry_at_ms = tonumber(ARGV[4] or "0") or 0
local message_id = ARGV[5] or ""
local order_id = ARGV[6] or ""
local error_code = ARGV[7] or ""

if now_ms <= 0 then
    local t = redis.call("TIME")
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

if redis.call("EXISTS", KEYS[1]) == 0 then
    return { NOT_FOUND, "", target }
end

local cur = redis.call("HMGET", KEYS[1], "reservation_id", "status", "message_id", "order_id")
if cur[1] ~= reservation_id then
    return { ID_CONFLICT, cur[2] or "", target }
end
local current = cur[2] or ""

-- A caller naming a different message or order than the record holds is
-- talking about another reservation, whatever the status says.
if message_id ~= "" and cur[3] and cur[3] ~= "" and cur[3] ~= message_id then
    return { ID_CONFLICT, current, target }
end
if order_id ~= "" and cur[4] and cur[4] ~= "" and cur[4] ~= order_id then
    return { ID_CONFLICT, current, target }
end

if current == target then
    return { IDEMPOTENT, current, target }
end

local allowed = {
    RESERVED = { SEND_UNKNOWN = true, ENQUEUED = true, RELEASE_PENDING = true },
    SEND_UNKNOWN = { ENQUEUED = true, RELEASE_PENDING = true },
    ENQUEUED = { ORDER_CREATED = true, REJECTED = true, RELEASE_PENDING = true },
    REJECTED = { RELEASE_PENDING = true },
}
if not allowed[current] or not allowed[current][target] then
    return { ILLEGAL_TRANSITION, current, target }
end

local fields = { "status", target, "updated_at_ms", now_ms }
if message_id ~= "" then
    fields[#fields + 1] = "message_id"
    fields[#fields + 1] = message_id
end
if order_id ~= "" then
    fields[#fields + 1] = "order_id"
    fields[#fields + 1] = order_id
end
if error_code ~= "" then
    fields[#fields + 1] = "error_code"
    fields[#fields + 1] = error_code
end
redis.call("HSET", KEYS[1], unpack(fields))

-- Keep the two indexes in step with the status. ZADD/ZREM on an existing zset
-- keep its absolute expiry; the zsets exist since the reservation was created.
if target == "SEND_UNKNOWN" then
    if next_retry_at_ms <= 0 then
        next_retry_at_ms = now_ms
    end
    redis.call("ZADD", KEYS[2], next_retry_at_ms, reservation_id)
elseif target == "ORDER_CREATED" then
    redis.call("ZREM", KEYS[2], reservation_id)
    redis.call("ZREM", KEYS[3], reservation_id)
else
    -- ENQUEUED, REJECTED, RELEASE_PENDING: nothing left to send.
    redis.call("ZREM", KEYS[2], reservation_id)
end

return { UPDATED, current, target }
