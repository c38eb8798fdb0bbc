package adapter

import "strings"

// Cluster slots. go-redis computes a key's slot in its internal hashtag
// package, which other modules cannot import; this is the same function as
// Redis Cluster specifies it: CRC16-CCITT (XModem: polynomial 0x1021,
// initial value 0) of the key's hash tag, modulo 16384. The hash tag is
// the part between the first '{' and the first '}' after it, when that
// part is not empty; otherwise the whole key.

// SlotCount is the number of slots of a Redis Cluster.
const SlotCount = 16384

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

// HashTagOf is the part of key that decides its slot.
func HashTagOf(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key[open+1 : open+1+end]
		}
	}
	return key
}

// KeySlot is key's cluster slot.
func KeySlot(key string) int { return int(crc16(HashTagOf(key))) % SlotCount }

// KeySlots returns the slot of each key, in order.
func KeySlots(keys []string) []int {
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = KeySlot(k)
	}
	return out
}
