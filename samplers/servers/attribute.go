package servers

import (
	"math"
	"slices"

	"seckill-harness/reports"
)

// SettleS is how long after a planned fault's effect ended an event it
// expects is still its doing: the cluster converging after a heal (a
// restarted node resyncing, a fail-back's flags clearing).
const SettleS = 10.0

// Cause is a planned fault as attribution sees it: its name, its window
// in seconds since the load started (ToS +Inf: still in force at the end)
// and the events it declares it may cause.
type Cause struct {
	Name     string
	FromS    float64
	ToS      float64
	Expected []reports.ExpectedEvent
}

// Explains reports whether the cause accounts for e: it expects e's kind
// on e's node (or on any node), and e began inside its window, from one
// sampling interval before its injection (the sample that shows an event
// comes after it) to SettleS after its end.
func (c Cause) Explains(e reports.Event, intervalS float64) bool {
	if e.TimeS < c.FromS-intervalS || e.TimeS > c.ToS+SettleS+intervalS {
		return false
	}
	return slices.ContainsFunc(c.Expected, func(x reports.ExpectedEvent) bool {
		return x.What == e.What && (x.Nodes == nil || slices.Contains(x.Nodes, e.Node))
	})
}

// Attribute is the validation step: every event a cause explains is
// attributed to the first such cause (Event.Fault names it); the rest are
// unplanned. Both keep the events' order.
func Attribute(events []reports.Event, causes []Cause, intervalS float64) (unplanned, attributed []reports.Event) {
	for _, e := range events {
		i := slices.IndexFunc(causes, func(c Cause) bool { return c.Explains(e, intervalS) })
		if i < 0 {
			unplanned = append(unplanned, e)
			continue
		}
		e.Fault = causes[i].Name
		attributed = append(attributed, e)
	}
	return unplanned, attributed
}

// Open is the ToS of a cause whose effect had not ended.
var Open = math.Inf(1)
