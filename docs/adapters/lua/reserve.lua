-- reserve.lua: atomically reserve one unit of a stock bucket for one user.
--
-- Contract (docs/ARCHITECTURE.md, "The path under test"). Every key shares the bucket's hash tag, so a call
-- touches one slot. Fixed complexity: no loops over data, no KEYS/SCAN.
--
-- KEYS: 1 meta  2 stock  3 req:<shard>  4 user:<user_id>  5 resv:<reservation_id>
--       6 send_pending  7 reservation_expiry  8 soldout
-- ARGV: 1 request_id  2 reservation_id  3 activity_id  4 sku_id  5 user_id
--       6 activity_version  7 reservation_ttl_ms  8 schema_version  9 bucket_id
--       10 message_id  11 now_ms_override (0 = Redis TIME)
-- Returns {code, reservation_id, remaining, status, replay}.
--
-- Order of checks: cached request result -> existing reservation record ->
-- user marker -> version -> window -> state -> stock sanity -> available <= 0
-- -> create the reservation, marker, both zsets, cache the result, and only
-- then move one unit from available to reserved.

local ACCEPTED, USER_ALREADY_RESERVED = 0, 10
local ACTIVITY_NOT_STARTED, ACTIVITY_ENDED, ACTIVITY_NOT_ACTIVE = 11, 12, 13
local VERSION_MISMATCH, SOLD_OUT, REQUEST_ID_CONFLICT = 14, 15, 16
local CONFIG_MISSING, RESERVATION_ID_CONFLICT = 17, 18
local INVARIANT_VIOLATION, BAD_ARGUMENT = 19, 20

local request_id = ARGV[1]
local reservation_id = ARGV[2]
local activity_id = ARGV[3]
local sku_id = ARGV[4]
local user_id = ARGV[5]
local activity_version = ARGV[6]
local ttl_ms = tonumber(ARGV[7])
local schema_version = ARGV[8]
local bucket_id = ARGV[9]
local message_id = ARGV[10]
local now_override = tonumber(ARGV[11] or "0")

local function reply(code, rid, remaining, status, replay)
    return { code, rid or "", remaining or -1, status or "", replay or 0 }
end

-- IDs that go into the packed request result or a key name: [A-Za-z0-9_-], 1..128 bytes.
local function valid_id(v)
    return v ~= nil and #v > 0 and #v <= 128 and string.find(v, "^[A-Za-z0-9_-]+$") ~= nil
end

if #KEYS ~= 8
    or not valid_id(request_id) or not valid_id(reservation_id)
    or not valid_id(user_id) or not valid_id(activity_id) or not valid_id(sku_id)
    or message_id == nil or message_id == "" or string.find(message_id, "|", 1, true)
    or ttl_ms == nil or ttl_ms <= 0
    or tonumber(activity_version) == nil or tonumber(bucket_id) == nil then
    return reply(BAD_ARGUMENT, "", -1, "BAD_ARGUMENT", 0)
end

local now_ms
if now_override ~= nil and now_override > 0 then
    now_ms = now_override
else
    local t = redis.call("TIME")
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- 1. The cached result of this request_id answers every repeat.
local cached = redis.call("HGET", KEYS[3], request_id)
if cached then
    local code, rid, remaining, status, owner =
        string.match(cached, "^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$")
    if code == nil then
        return reply(INVARIANT_VIOLATION, "", -1, "CORRUPTED_REQUEST_RESULT", 0)
    end
    if owner ~= user_id then
        -- Another user's request_id: refuse without leaking its reservation.
        return reply(REQUEST_ID_CONFLICT, "", -1, "REQUEST_ID_CONFLICT", 1)
    end
    return reply(tonumber(code), rid, tonumber(remaining), status, 1)
end

local meta = redis.call("HMGET", KEYS[1], "activity_id", "sku_id", "bucket_id", "state",
    "version", "starts_at_ms", "ends_at_ms", "retention_until_ms")
for i = 1, 8 do
    if not meta[i] then
        return reply(CONFIG_MISSING, "", -1, "CONFIG_MISSING", 0)
    end
end
if meta[1] ~= activity_id or meta[2] ~= sku_id or meta[3] ~= bucket_id then
    return reply(INVARIANT_VIOLATION, "", -1, "META_SCOPE_MISMATCH", 0)
end
local state = meta[4]
local starts_at_ms = tonumber(meta[6])
local ends_at_ms = tonumber(meta[7])
local retention_until_ms = tonumber(meta[8])
if not starts_at_ms or not ends_at_ms or not retention_until_ms or retention_until_ms <= now_ms then
    return reply(INVARIANT_VIOLATION, "", -1, "INVALID_META_TIME", 0)
end

local function available_now()
    return tonumber(redis.call("HGET", KEYS[2], "available") or "-1") or -1
end

-- The first answer to a request_id is kept until retention_until_ms (absolute).
local function remember(code, rid, remaining, status)
    redis.call("HSET", KEYS[3], request_id,
        tostring(code) .. "|" .. (rid or "") .. "|" .. tostring(remaining) .. "|" .. status .. "|" .. user_id)
    redis.call("PEXPIREAT", KEYS[3], retention_until_ms)
end

-- 2. The reservation record exists but the cached result was lost: rebuild it.
if redis.call("EXISTS", KEYS[5]) == 1 then
    local r = redis.call("HMGET", KEYS[5], "request_id", "user_id", "reservation_id", "status")
    if r[1] == request_id and r[2] == user_id and r[3] == reservation_id then
        local avail = available_now()
        remember(ACCEPTED, reservation_id, avail, "QUEUED")
        return reply(ACCEPTED, reservation_id, avail, "QUEUED", 1)
    end
    return reply(RESERVATION_ID_CONFLICT, "", -1, "RESERVATION_ID_CONFLICT", 0)
end

-- 3. One reservation per user.
local held = redis.call("GET", KEYS[4])
if held then
    local avail = available_now()
    remember(USER_ALREADY_RESERVED, held, avail, "USER_ALREADY_RESERVED")
    return reply(USER_ALREADY_RESERVED, held, avail, "USER_ALREADY_RESERVED", 0)
end

-- 4..6. Version, window, state: final answers for this request_id.
local function refuse(code, status)
    local avail = available_now()
    remember(code, "", avail, status)
    return reply(code, "", avail, status, 0)
end
if meta[5] ~= activity_version then
    return refuse(VERSION_MISMATCH, "VERSION_MISMATCH")
end
if now_ms < starts_at_ms then
    return refuse(ACTIVITY_NOT_STARTED, "ACTIVITY_NOT_STARTED")
end
if now_ms > ends_at_ms then
    return refuse(ACTIVITY_ENDED, "ACTIVITY_ENDED")
end
if state ~= "ACTIVE" then
    return refuse(ACTIVITY_NOT_ACTIVE, "ACTIVITY_NOT_ACTIVE")
end

-- 7. Stock sanity: initial == available + reserved, all >= 0.
local stock = redis.call("HMGET", KEYS[2], "initial", "available", "reserved")
local initial, available, reserved = tonumber(stock[1]), tonumber(stock[2]), tonumber(stock[3])
if not initial or not available or not reserved then
    return reply(CONFIG_MISSING, "", -1, "STOCK_CONFIG_MISSING", 0)
end
if initial < 0 or available < 0 or reserved < 0 or available + reserved ~= initial then
    return reply(INVARIANT_VIOLATION, "", available, "STOCK_INVARIANT_VIOLATION", 0)
end

-- 8. Sold out.
if available <= 0 then
    redis.call("SET", KEYS[8], "1", "PXAT", retention_until_ms)
    remember(SOLD_OUT, "", 0, "SOLD_OUT")
    return reply(SOLD_OUT, "", 0, "SOLD_OUT", 0)
end

local expires_at_ms = now_ms + ttl_ms
if expires_at_ms >= retention_until_ms then
    return reply(BAD_ARGUMENT, "", available, "RESERVATION_TTL_TOO_LONG", 0)
end

-- 9. Create the recovery data first, then move the unit. Nothing in between
-- is observable: the script runs atomically.
local remaining = available - 1
redis.call("SET", KEYS[4], reservation_id, "PXAT", retention_until_ms)
redis.call("HSET", KEYS[5],
    "reservation_id", reservation_id,
    "request_id", request_id,
    "message_id", message_id,
    "activity_id", activity_id,
    "sku_id", sku_id,
    "user_id", user_id,
    "activity_version", activity_version,
    "bucket_id", bucket_id,
    "status", "RESERVED",
    "reserved_at_ms", now_ms,
    "expires_at_ms", expires_at_ms,
    "updated_at_ms", now_ms,
    "order_id", "",
    "error_code", "",
    "release_reason", "",
    "schema_version", schema_version)
redis.call("PEXPIREAT", KEYS[5], retention_until_ms)
redis.call("ZADD", KEYS[6], now_ms, reservation_id)
redis.call("PEXPIREAT", KEYS[6], retention_until_ms)
redis.call("ZADD", KEYS[7], expires_at_ms, reservation_id)
redis.call("PEXPIREAT", KEYS[7], retention_until_ms)
remember(ACCEPTED, reservation_id, remaining, "QUEUED")
redis.call("HINCRBY", KEYS[2], "available", -1)
redis.call("HINCRBY", KEYS[2], "reserved", 1)
if remaining == 0 then
    redis.call("SET", KEYS[8], "1", "PXAT", retention_until_ms)
end
return reply(ACCEPTED, reservation_id, remaining, "QUEUED", 0)
