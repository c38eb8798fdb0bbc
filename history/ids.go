package history

import (
	"strconv"

	"seckill-harness/lua"
)

// UserID is the id of user u.
func UserID(u uint32) string { return prefixed('u', u) }

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
