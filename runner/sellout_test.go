package runner

import (
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
)

func TestAnalyzeSellOut(t *testing.T) {
	a := &lua.Activity{Stock: 4, Buckets: 2} // 2 units per bucket
	acc := func(id uint32, b uint16, end time.Duration, rid string) history.Op {
		return history.Op{ID: id, Kind: history.KindFresh, Bucket: b, End: end, RID: rid, Outcome: history.Outcome(lua.Accepted)}
	}
	h := &history.History{Ops: []history.Op{
		acc(0, 0, 10*time.Millisecond, "a"),
		acc(1, 0, 20*time.Millisecond, "b"), // bucket 0 sold out at 20 ms
		acc(2, 0, 25*time.Millisecond, "b"), // a replay: not a second unit
		{ID: 3, Kind: history.KindFresh, Bucket: 0, End: 30 * time.Millisecond, Outcome: history.Outcome(lua.SoldOut)},
		acc(4, 1, 40*time.Millisecond, "c"),
		acc(5, 1, 50*time.Millisecond, "d"), // bucket 1 sold out at 50 ms
		{ID: 6, Kind: history.KindFresh, Bucket: 1, End: 60 * time.Millisecond, Outcome: history.Outcome(lua.SoldOut)},
	}}
	s := AnalyzeSellOut(h, a)
	if s.SoldOutAt[0] != 20*time.Millisecond || s.SoldOutAt[1] != 50*time.Millisecond || s.FirstSoldOut != 20*time.Millisecond {
		t.Fatalf("%+v", s)
	}
	if s.UnsoldAtFirst[1] != 2 || s.UnsoldAtFirstTotal != 2 || s.SoldOutAnswersWhileStockLeft != 1 {
		t.Fatalf("%+v", s)
	}
}
