package adapter

import "seckill-harness/compose"

// KeySlot is key's cluster slot, as Redis Cluster computes it
// (compose.KeySlot: CRC16 of the hash tag, modulo 16384).
func KeySlot(key string) int { return compose.KeySlot(key) }

// KeySlots returns the slot of each key, in order.
func KeySlots(keys []string) []int {
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = KeySlot(k)
	}
	return out
}
