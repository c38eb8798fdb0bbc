package history

import (
	"strconv"

	"seckill-harness/lua"
)

// UserID is the id of user u.
func UserID(u uint32) string { return prefixed('u', u) }

// ParseUserID is the index of user id s (UserID's inverse); false when s
// is not one.
func ParseUserID(s string) (uint32, bool) { return parsePrefixed('u', s) }

// parsePrefixed is prefixed's inverse.
func parsePrefixed(p byte, s string) (uint32, bool) {
	if len(s) < 2 || s[0] != p {
		return 0, false
	}
	n, err := strconv.ParseUint(s[1:], 10, 32)
	return uint32(n), err == nil && prefixed(p, uint32(n)) == s
}

// RequestID is the id of request r.
func RequestID(r uint32) string { return prefixed('r', r) }

// prefixed is p followed by n in decimal, with one allocation.
func prefixed(p byte, n uint32) string {
	var buf [11]byte
	return string(appendPrefixed(buf[:0], p, n))
}

// appendPrefixed appends p and n in decimal to b.
func appendPrefixed(b []byte, p byte, n uint32) []byte {
	return strconv.AppendUint(append(b, p), uint64(n), 10)
}

// UserAndRequestID is UserID(u) and RequestID(r) from one allocation.
func UserAndRequestID(u, r uint32) (userID, requestID string) {
	var buf [22]byte
	b := appendPrefixed(buf[:0], 'u', u)
	n := len(b)
	s := string(appendPrefixed(b, 'r', r))
	return s[:n], s[n:]
}

// UserBucket is the bucket of user u in a (a.BucketOf(UserID(u))) without
// an allocation: the id is built on the stack, only hashed.
func UserBucket(a *lua.Activity, u uint32) uint32 {
	var buf [11]byte
	b := appendPrefixed(buf[:0], 'u', u)
	return a.BucketOf(string(b))
}
