package lua

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"hash"
	"strconv"
)

// RequestShards is the number of request-result hashes per bucket.
const RequestShards = 256

// MaxIDLen is the longest activity, sku, user or request id accepted.
const MaxIDLen = 128

// Scope names one stock bucket of one activity version. All keys of a script
// call are built from one Scope, so they share its hash tag and one slot.
type Scope struct {
	ActivityID string
	SKUID      string
	Version    int64
	Bucket     uint32
}

// HashTag is the part of every key inside the braces:
// a:<activity_id>:s:<sku_id>:v:<version>:b:<bucket>.
func (s Scope) HashTag() string {
	return "a:" + s.ActivityID + ":s:" + s.SKUID + ":v:" + strconv.FormatInt(s.Version, 10) +
		":b:" + strconv.FormatUint(uint64(s.Bucket), 10)
}

// Key returns seckill:{<hash tag>}:<suffix>.
func (s Scope) Key(suffix string) string { return s.key(suffix, "") }

// key is seckill:{<hash tag>}:<suffix><id>, built with one allocation (a
// version and a bucket below 100 format without allocating): it is on
// every call's path.
func (s Scope) key(suffix, id string) string {
	return "seckill:{a:" + s.ActivityID + ":s:" + s.SKUID + ":v:" + strconv.FormatInt(s.Version, 10) +
		":b:" + strconv.FormatUint(uint64(s.Bucket), 10) + "}:" + suffix + id
}

// MetaKey is the bucket's activity metadata hash.
func (s Scope) MetaKey() string { return s.Key("meta") }

// StockKey is the bucket's stock hash (initial, available, reserved, released_total).
func (s Scope) StockKey() string { return s.Key("stock") }

// ReqShardKey is the request-result hash that holds requestID's answer.
func (s Scope) ReqShardKey(requestID string) string {
	return s.key(reqShardSuffixes[RequestShard(requestID)], "")
}

// ReqShardKeyN is request-result hash number n (0..RequestShards-1).
func (s Scope) ReqShardKeyN(n int) string {
	if n >= 0 && n < RequestShards {
		return s.key(reqShardSuffixes[n], "")
	}
	return s.Key(fmt.Sprintf("req:%03d", n))
}

// reqShardSuffixes are "req:000" … "req:255".
var reqShardSuffixes = func() (out [RequestShards]string) {
	for i := range out {
		out[i] = fmt.Sprintf("req:%03d", i)
	}
	return out
}()

// UserKey is the one-per-user marker of userID.
func (s Scope) UserKey(userID string) string { return s.key("user:", userID) }

// ResvKey is the reservation record of reservationID.
func (s Scope) ResvKey(reservationID string) string { return s.key("resv:", reservationID) }

// SendPendingKey is the zset of reservations waiting to be sent, by next retry time.
func (s Scope) SendPendingKey() string { return s.Key("send_pending") }

// ExpiryKey is the zset of reservations by expires_at_ms.
func (s Scope) ExpiryKey() string { return s.Key("reservation_expiry") }

// SoldoutKey is set while the bucket has no available stock.
func (s Scope) SoldoutKey() string { return s.Key("soldout") }

// RequestShard is fnv32a(requestID) % 256.
func RequestShard(requestID string) uint32 {
	// fnv32a inline: hash/fnv's state and the []byte copy would allocate.
	h := uint32(2166136261)
	for i := 0; i < len(requestID); i++ {
		h ^= uint32(requestID[i])
		h *= 16777619
	}
	return h % RequestShards
}

// BucketFor routes a user to a bucket: fnv64a(activity\0sku\0user) % buckets.
// A user never changes bucket for a given bucket count. buckets <= 1 gives 0.
func BucketFor(activityID, skuID, userID string, buckets uint32) uint32 {
	if buckets <= 1 {
		return 0
	}
	// fnv64a inline, without hash/fnv's allocations.
	h := uint64(14695981039346656037)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
	}
	add(activityID)
	h *= 1099511628211 // the 0 separator: h ^= 0, then the multiply
	add(skuID)
	h *= 1099511628211
	add(userID)
	return uint32(h % uint64(buckets))
}

// ReservationID derives the reservation id of one request: the first 26
// characters, lower case, of the unpadded base32 of
// HMAC-SHA256(secret, activity\0sku\0user\0request). The same request always
// gets the same id, which is what makes a retry after a lost reply safe.
func ReservationID(secret []byte, activityID, skuID, userID, requestID string) string {
	return newMACState(secret).reservationID(activityID, skuID, userID, requestID)
}

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// macState is one HMAC state keyed with a secret and the scratch space a
// derivation needs: kept together (and reused through a pool), the input
// and the digest do not escape to the heap at every call through the
// hash.Hash interface.
type macState struct {
	mac hash.Hash
	in  [4*MaxIDLen + 3]byte
	sum [sha256.Size]byte
}

func newMACState(secret []byte) *macState { return &macState{mac: hmac.New(sha256.New, secret)} }

// reservationID computes the id (ReservationID) with this state.
func (m *macState) reservationID(activityID, skuID, userID, requestID string) string {
	enc := m.encodeReservationID(activityID, skuID, userID, requestID)
	return string(enc[:26])
}

// encodeReservationID is the reservation id's bytes in enc[:26].
func (m *macState) encodeReservationID(activityID, skuID, userID, requestID string) (enc [52]byte) {
	m.mac.Reset()
	b := append(m.in[:0], activityID...)
	b = append(b, 0)
	b = append(b, skuID...)
	b = append(b, 0)
	b = append(b, userID...)
	b = append(b, 0)
	b = append(b, requestID...)
	_, _ = m.mac.Write(b)
	lowerBase32.Encode(enc[:], m.mac.Sum(m.sum[:0])) // base32 of 32 bytes, unpadded
	return enc
}

// reservationAndMessageID is reservationID and MessageID of it, both from
// one allocation (the reservation id is a substring of the message id).
func (m *macState) reservationAndMessageID(activityID, skuID, userID, requestID string) (rid, msgID string) {
	enc := m.encodeReservationID(activityID, skuID, userID, requestID)
	const pre, post = "reserve-order:", ":v1"
	var buf [len(pre) + 26 + len(post)]byte
	b := append(append(append(buf[:0], pre...), enc[:26]...), post...)
	msgID = string(b)
	return msgID[len(pre) : len(pre)+26], msgID
}

// MessageID is the id of the order message of a reservation: reserve-order:<id>:v1.
func MessageID(reservationID string) string { return "reserve-order:" + reservationID + ":v1" }

// ValidateID checks an id that goes into a key name or a packed request
// result: 1..128 bytes of [A-Za-z0-9_-]. The error names the field.
func ValidateID(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", field)
	}
	if len(v) > MaxIDLen {
		return fmt.Errorf("%s is %d bytes, at most %d allowed", field, len(v), MaxIDLen)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%s %q has %q at byte %d: only [A-Za-z0-9_-] is allowed", field, v, c, i)
		}
	}
	return nil
}
