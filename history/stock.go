package history

import (
	"time"

	"seckill-harness/lua"
)

// StockSample is one reading of one bucket's stock hash during the run.
type StockSample struct {
	At     time.Duration // offset from the run's start
	Bucket uint32
	Stock  lua.Stock
	Err    string // the read failed (e.g. during a failover); Stock is zero
	// AvailableOnly: the system exposes its available units but no held
	// counter (sut.Available without sut.Stock): Stock.Reserved is not
	// read, and the reading breaks I1 only with available below 0.
	AvailableOnly bool
}

// Violates reports a successful reading that breaks I1: available +
// reserved != initial or either below 0, or, for a reading of the
// available units alone, available below 0.
func (s StockSample) Violates() bool {
	if s.Err != "" {
		return false
	}
	if s.AvailableOnly {
		return s.Stock.Available < 0
	}
	return !s.Stock.Conserved()
}
