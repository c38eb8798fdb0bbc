package badpaths

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"seckill-harness/lua"
)

// edit is one precise change of a script's source: Old must occur exactly
// once, and is replaced by New.
type edit struct {
	Old, New string
}

// applyEdits applies every edit to src or fails naming the one that did not
// apply: a bad path that silently ran the unmodified script would be a
// negative control that proves nothing.
func applyEdits(file, src string, edits []edit) (string, error) {
	for i, e := range edits {
		if n := strings.Count(src, e.Old); n != 1 {
			return "", fmt.Errorf("badpaths: edit %d of %s: %q occurs %d times in the embedded script (want exactly 1): lua/%s changed, update the edit",
				i+1, file, firstLine(e.Old), n, file)
		}
		src = strings.Replace(src, e.Old, e.New, 1)
	}
	return src, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func script(name, src string) *lua.Script {
	sum := sha1.Sum([]byte(src))
	return &lua.Script{Name: name, Source: src, SHA1: hex.EncodeToString(sum[:])}
}

// The Lua variants, derived from lua.Embedded() by the edits below.
var (
	// lua-no-request-idempotency: request-id idempotency removed — the
	// cached-result lookup (step 1) and its fallback, the rebuild of the
	// answer from the deterministic reservation record (step 2). A script
	// without request idempotency has neither; with step 2 left in, a replay
	// of an ACCEPTED request would still answer ACCEPTED from the record.
	// The user marker stays, so a replay answers USER_ALREADY_RESERVED.
	noRequestIdempotencyEdits = []edit{
		{`local cached = redis.call("HGET", KEYS[3], request_id)`,
			`local cached = false -- badpath lua-no-request-idempotency: the cached request result is never read`},
		{`if redis.call("EXISTS", KEYS[5]) == 1 then`,
			`if false then -- badpath lua-no-request-idempotency: nor is the answer rebuilt from the record`},
	}
	// lua-no-user-marker: the one-per-user check (step 3) removed; the
	// marker is still written.
	noUserMarkerEdits = []edit{
		{`local held = redis.call("GET", KEYS[4])`,
			`local held = false -- badpath lua-no-user-marker: the one-per-user marker is never read`},
	}
	// lua-no-ttl: the reservation record is written without its absolute
	// expiry (the PEXPIREAT at retention_until_ms dropped): every
	// reservation outlives the sale.
	noTTLEdits = []edit{
		{`redis.call("PEXPIREAT", KEYS[5], retention_until_ms)`,
			`-- badpath lua-no-ttl: the reservation record never expires`},
	}
	// compensate-marker-left: the user marker is reported deleted
	// (marker_deleted=1) but left in place.
	compensateMarkerLeftEdits = []edit{
		{`marker_deleted = redis.call("DEL", KEYS[2])`,
			`marker_deleted = 1 -- badpath compensate-marker-left: reported deleted, left in place`},
	}
	// lua-stale-soldout: SOLD_OUT answered, touching nothing, to half the
	// users while the bucket holds 100 to 110 units.
	staleSoldOutEdits = []edit{
		{`-- 8. Sold out.`,
			`if available >= 100 and available <= 110 and string.byte(user_id, -1) % 2 == 0 then
    return reply(SOLD_OUT, "", 0, "SOLD_OUT", 0) -- badpath lua-stale-soldout: a stale sold-out flag
end
-- 8. Sold out.`},
	}
	// lua-stale-remaining: ACCEPTED answered with a count five units
	// above the one left, to half the users while 100 to 110 units are
	// left (a count read from a lagging copy); the sale itself is right.
	staleRemainingEdits = []edit{
		{`return reply(ACCEPTED, reservation_id, remaining, "QUEUED", 0)`,
			`if remaining >= 100 and remaining <= 110 and string.byte(user_id, -1) % 2 == 0 then
    return reply(ACCEPTED, reservation_id, remaining + 5, "QUEUED", 0) -- badpath lua-stale-remaining: a count from five sales ago
end
return reply(ACCEPTED, reservation_id, remaining, "QUEUED", 0)`},
	}
	// compensate-false-already-released: ALREADY_RELEASED answered,
	// touching nothing, for live reservations whose id ends in an even
	// byte (a status read from a stale copy): the reservation stays held.
	compensateFalseAlreadyReleasedEdits = []edit{
		{`if status == "RELEASED" then`,
			`if status == "RELEASED" or string.byte(reservation_id, -1) % 2 == 0 then -- badpath compensate-false-already-released`},
	}
	// compensate-without-status-check: releases whatever the status
	// (RELEASED again, SEND_UNKNOWN, ENQUEUED, RESERVED).
	compensateNoStatusEdits = []edit{
		{`if status == "RELEASED" then`,
			`if false then -- badpath compensate-without-status-check: RELEASED is released again`},
		{`if status ~= "REJECTED" and status ~= "RELEASE_PENDING" then`,
			`if false then -- badpath compensate-without-status-check: any status is compensatable`},
	}
)

type variant struct {
	once    sync.Once
	scripts *lua.Scripts
	err     error
	build   func(emb *lua.Scripts) (*lua.Scripts, error)
}

func (v *variant) get() (*lua.Scripts, error) {
	v.once.Do(func() { v.scripts, v.err = v.build(lua.Embedded()) })
	return v.scripts, v.err
}

func reserveVariant(origin string, edits []edit) *variant {
	return &variant{build: func(emb *lua.Scripts) (*lua.Scripts, error) {
		src, err := applyEdits(lua.ReserveFile, emb.Reserve.Source, edits)
		if err != nil {
			return nil, err
		}
		return &lua.Scripts{Reserve: script(lua.ReserveFile, src), Transition: emb.Transition, Compensate: emb.Compensate,
			Origin: "badpath " + origin}, nil
	}}
}

func compensateVariant(origin string, edits []edit) *variant {
	return &variant{build: func(emb *lua.Scripts) (*lua.Scripts, error) {
		src, err := applyEdits(lua.CompensateFile, emb.Compensate.Source, edits)
		if err != nil {
			return nil, err
		}
		return &lua.Scripts{Reserve: emb.Reserve, Transition: emb.Transition, Compensate: script(lua.CompensateFile, src),
			Origin: "badpath " + origin}, nil
	}}
}
