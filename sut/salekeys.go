package sut

import "seckill-harness/lua"

// SaleKeys is the ability of a system under test to say where on the
// cluster it keeps its sale: the faults' hot-master, hot-replica and
// slot-migration's hot slot aim there. A system without it keeps the
// reference contract's keys (the reference path), or — when it cannot
// tell — the harness observes where its Redis traffic goes.
type SaleKeys interface {
	// SaleSlots returns the slot of each bucket of a as the system keeps
	// it, bucket 0 first, and where that was read from, in words
	// ("service mapping hash_tag {sku:sku1}"); nil slots: it cannot tell
	// (no hash tag, or one that names the user: the sale spans slots).
	SaleSlots(a *lua.Activity) (slots []int, from string)
}
