package runner

import (
	"sort"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
)

// SellOut is how the stock ran out, per bucket: the specification's "partial
// sell-out" of bucketed stock, where one bucket is empty while others still
// hold units and users routed to the empty one are told SOLD_OUT.
type SellOut struct {
	// SoldOutAt per bucket: when the bucket's last unit was taken (the answer
	// time of the acknowledged reservation that emptied it); -1 if never.
	SoldOutAt []time.Duration
	// FirstSoldOut is the earliest SoldOutAt (-1 if no bucket sold out).
	FirstSoldOut time.Duration
	// UnsoldAtFirst is, per bucket, the units still unsold when the first
	// bucket sold out (-1 if none did).
	UnsoldAtFirst []int64
	// UnsoldAtFirstTotal sums UnsoldAtFirst over the other buckets.
	UnsoldAtFirstTotal int64
	// SoldOutAnswersWhileStockLeft counts SOLD_OUT answers given while
	// another bucket still had units (users turned away by the split).
	SoldOutAnswersWhileStockLeft int
}

// AnalyzeSellOut reads the sell-out of each bucket from the history. It
// counts acknowledged distinct reservations per bucket in answer order; a
// bucket is sold out when that count reaches its share of the stock. Releases
// are not modelled (compare runs have none).
func AnalyzeSellOut(h *history.History, a *lua.Activity) SellOut {
	type ack struct {
		end    time.Duration
		bucket uint16
	}
	seen := map[string]bool{}
	var acks []ack
	var soldOut []ack
	for _, o := range h.All() {
		if o.Accepted() && o.RID != "" && !seen[o.RID] {
			seen[o.RID] = true
			acks = append(acks, ack{o.End, o.Bucket})
		}
		if o.Kind.IsReserve() && o.Outcome == history.Outcome(lua.SoldOut) {
			soldOut = append(soldOut, ack{o.End, o.Bucket})
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].end < acks[j].end })
	n := int(a.Buckets)
	s := SellOut{SoldOutAt: make([]time.Duration, n), FirstSoldOut: -1, UnsoldAtFirst: make([]int64, n)}
	taken := make([]int64, n)
	for b := range s.SoldOutAt {
		s.SoldOutAt[b] = -1
	}
	for _, k := range acks {
		b := int(k.bucket)
		taken[b]++
		if taken[b] == a.BucketStock(uint32(b)) && s.SoldOutAt[b] < 0 {
			s.SoldOutAt[b] = k.end
		}
	}
	for _, t := range s.SoldOutAt {
		if t >= 0 && (s.FirstSoldOut < 0 || t < s.FirstSoldOut) {
			s.FirstSoldOut = t
		}
	}
	if s.FirstSoldOut < 0 {
		for b := range s.UnsoldAtFirst {
			s.UnsoldAtFirst[b] = -1
		}
		return s
	}
	takenAt := make([]int64, n)
	for _, k := range acks {
		if k.end <= s.FirstSoldOut {
			takenAt[k.bucket]++
		}
	}
	for b := 0; b < n; b++ {
		s.UnsoldAtFirst[b] = a.BucketStock(uint32(b)) - takenAt[b]
		s.UnsoldAtFirstTotal += s.UnsoldAtFirst[b]
	}
	// A SOLD_OUT answer while some other bucket still had stock.
	for _, so := range soldOut {
		for b := 0; b < n; b++ {
			if b != int(so.bucket) && (s.SoldOutAt[b] < 0 || s.SoldOutAt[b] > so.end) {
				s.SoldOutAnswersWhileStockLeft++
				break
			}
		}
	}
	return s
}
