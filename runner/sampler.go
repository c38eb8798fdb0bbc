package runner

import (
	"context"
	"time"

	"seckill-harness/lua"
	"seckill-harness/sut"
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

// sampleStock reads every bucket's stock through sys's StateReader about
// once per `every` until ctx ends (its available units alone when that is
// all sys exposes: StockSample.AvailableOnly); nothing when sys does not
// expose its stock. Each reading has a short timeout (one HMGET for the reference),
// so a paused node delays the sampler, never the load. observe, when set,
// sees each reading.
func sampleStock(ctx context.Context, a *lua.Activity, sys sut.System, began time.Time, every time.Duration, observe func(StockSample)) []StockSample {
	var out []StockSample
	rd, ok := sut.Ability[sut.StateReader](sys)
	exposed := sut.Exposed(sys)
	if !ok || !exposed[sut.Available] {
		<-ctx.Done()
		return nil
	}
	availableOnly := !exposed[sut.Stock]
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
		for b := uint32(0); b < a.Buckets; b++ {
			rctx, cancel := context.WithTimeout(ctx, every)
			st, err := rd.ReadStock(rctx, a, b)
			cancel()
			s := StockSample{At: time.Since(began), Bucket: b, Stock: st, AvailableOnly: availableOnly}
			if err != nil {
				if ctx.Err() != nil {
					return out
				}
				s.Err = err.Error()
			}
			out = append(out, s)
			if observe != nil {
				observe(s)
			}
		}
	}
}
