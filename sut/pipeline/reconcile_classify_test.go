package pipeline

import (
	"testing"

	"seckill-harness/lua"
)

// classify names every lost reservation: one with its order stands as
// order_reservation_lost, an ACCEPTED one without an order as
// accepted_reservation_lost; a record Redis never had that nobody was
// told ACCEPTED for is not a divergence. orderCommittedSince asks for a
// fresh PostgreSQL snapshot exactly when a record is ORDER_CREATED with no
// CREATED order in the one read.
func TestClassifyNamesEveryLostReservation(t *testing.T) {
	f := &OrderFacts{StockFound: true, Total: 2, Sold: 2, Orders: []PGOrder{
		{OrderID: "ord-kept", RID: "kept", Status: "CREATED"},
		{OrderID: "ord-lostwith", RID: "lostwith", Status: "CREATED"},
	}, Ledger: []LedgerRow{{Delta: 1}, {Delta: 1}}}
	states := map[string]ResvState{
		"kept":        {Found: true, Status: lua.StatusOrderCreated},
		"lostwith":    {},
		"lostwithout": {},
		"neveracked":  {},
	}
	acked := map[string]bool{"kept": true, "lostwith": true, "lostwithout": true}
	pass := classify(f, states, acked, 1, true)
	got := map[string]string{}
	for _, d := range pass.Divergences {
		got[d.RID] = d.Class
	}
	want := map[string]string{"lostwith": DivOrderReservationLost, "lostwithout": DivAcceptedReservationLost}
	if len(got) != len(want) || got["lostwith"] != want["lostwith"] || got["lostwithout"] != want["lostwithout"] {
		t.Fatalf("divergences %v, want %v", got, want)
	}
	if pass.Stock["redis_lost_with_order"] != 1 || pass.Stock["redis_lost_without_order"] != 1 {
		t.Errorf("stock figures %v", pass.Stock)
	}
	if orderCommittedSince(f, states) {
		t.Error("a fresh snapshot asked for although every ORDER_CREATED record has its order")
	}
	states["late"] = ResvState{Found: true, Status: lua.StatusOrderCreated}
	if !orderCommittedSince(f, states) {
		t.Error("an ORDER_CREATED record without an order in the snapshot did not ask for a fresh one")
	}
}
