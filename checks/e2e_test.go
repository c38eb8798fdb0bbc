package checks

import (
	"testing"

	"seckill-harness/lua"
	"seckill-harness/sut/pipeline"
)

// The E-checks are pure: fixtures of facts, each broken in one way, and the
// one check that must catch it (the others stay green).
func TestEndToEndChecksOnFixtures(t *testing.T) {
	good := func() *EndToEndFacts {
		f := &EndToEndFacts{Stock: 2, Accepted: map[string]uint32{"r1": 0, "r2": 0, "r3": 0},
			Redis: map[string]pipeline.ResvState{
				"r1": {Found: true, Status: lua.StatusOrderCreated},
				"r2": {Found: true, Status: lua.StatusOrderCreated},
				"r3": {Found: true, Status: lua.StatusReleased, ReleaseReason: "order-rejected"},
			},
			Sends: map[string]int{"r1": 1, "r2": 1, "r3": 1}, Received: map[string]int{"r1": 1, "r2": 1, "r3": 1},
			Canceled: map[string]bool{}, Drained: true,
			Recon: pipeline.Reconciliation{Final: &pipeline.ReconcilePass{}},
			PG: &pipeline.OrderFacts{StockFound: true, Total: 2, Sold: 2,
				Orders: []pipeline.PGOrder{{OrderID: "o1", User: "u1", RID: "r1", MessageID: "m1", Status: "CREATED"},
					{OrderID: "o2", User: "u2", RID: "r2", MessageID: "m2", Status: "CREATED"}},
				Inbox: []pipeline.InboxRow{{MessageID: "m1", RID: "r1", Result: pipeline.OrderCreated},
					{MessageID: "m2", RID: "r2", Result: pipeline.OrderCreated},
					{MessageID: "m3", RID: "r3", Result: pipeline.OrderNoStock}}},
		}
		return f
	}
	cases := []struct {
		name   string
		want   string
		break_ func(f *EndToEndFacts)
	}{
		{"correct", "", func(*EndToEndFacts) {}},
		{"oversold", "E1", func(f *EndToEndFacts) {
			f.PG.Orders = append(f.PG.Orders, pipeline.PGOrder{OrderID: "o3", User: "u3", RID: "r3", MessageID: "m3", Status: "CREATED"})
			f.PG.Sold = 3
			f.PG.Inbox[2].Result = pipeline.OrderCreated
		}},
		{"two orders of a user", "E2", func(f *EndToEndFacts) { f.PG.Orders[1].User = "u1" }},
		{"two orders of a reservation", "E3", func(f *EndToEndFacts) {
			f.PG.Total = 3
			f.PG.Orders = append(f.PG.Orders, pipeline.PGOrder{OrderID: "o1b", User: "u9", RID: "r1", MessageID: "m1", Status: "CREATED"})
		}},
		{"released unit with an order", "E4", func(f *EndToEndFacts) {
			f.Recon.Final.Divergences = []pipeline.Divergence{{Class: pipeline.DivReleasedWithOrder, RID: "r2"}}
		}},
		{"never dispatched", "E5", func(f *EndToEndFacts) {
			f.PG.Inbox = f.PG.Inbox[:2]
			f.Sends["r3"], f.Received["r3"] = 0, 0
			f.Redis["r3"] = pipeline.ResvState{Found: true, Status: lua.StatusReleased, ReleaseReason: "expired-no-order"}
		}},
	}
	for _, c := range cases {
		f := good()
		c.break_(f)
		for _, chk := range endToEndChecks(f) {
			failed := chk.Status == StatusFail
			if failed != (chk.ID == c.want) {
				t.Errorf("%s: %s %s: %s", c.name, chk.ID, chk.Status, chk.Detail)
			}
		}
	}
	// A lost reservation with its order is explained when it was ACCEPTED,
	// not when no client was ever told ACCEPTED for it.
	f := good()
	f.Recon.Final.Divergences = []pipeline.Divergence{{Class: pipeline.DivOrderReservationLost, RID: "r2"}}
	if c := judgeE4(&Facts{EndToEnd: f}); c.Failed {
		t.Errorf("lost accepted reservation: E4 failed: %s", c.Detail)
	}
	f.Recon.Final.Divergences[0].RID = "nobody"
	if c := judgeE4(&Facts{EndToEnd: f}); !c.Failed {
		t.Errorf("order for a reservation never accepted: E4 passed: %s", c.Detail)
	}
	// So is an ACCEPTED reservation Redis lost before its order (I6 judges
	// the loss); the same class for a reservation never acknowledged is not.
	f.Recon.Final.Divergences = []pipeline.Divergence{{Class: pipeline.DivAcceptedReservationLost, RID: "r2"}}
	if c := judgeE4(&Facts{EndToEnd: f}); c.Failed {
		t.Errorf("accepted reservation lost before its order: E4 failed: %s", c.Detail)
	}
	f.Recon.Final.Divergences[0].RID = "nobody"
	if c := judgeE4(&Facts{EndToEnd: f}); !c.Failed {
		t.Errorf("lost reservation never acknowledged: E4 passed: %s", c.Detail)
	}
}

// endToEndChecks judges the table's end-to-end checks on f alone, in
// table order, as JudgeFacts does.
func endToEndChecks(f *EndToEndFacts) []Check {
	facts := &Facts{EndToEnd: f}
	var out []Check
	for i := range invariants {
		if inv := &invariants[i]; inv.EndToEnd {
			out = append(out, inv.judge(facts))
		}
	}
	return out
}
