// Package stock samples the stock of a sale while the load runs: every
// bucket's counters, about once per period, through the system's
// StateReader (the readings I1 judges during the run, not only at its end).
package stock

import (
	"context"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Sample reads every bucket's stock through sys's StateReader about
// once per `every` until ctx ends (its available units alone when that is
// all sys exposes: StockSample.AvailableOnly); nothing when sys does not
// expose its stock. Each reading has a short timeout (one HMGET for the reference),
// so a paused node delays the sampler, never the load. observe, when set,
// sees each reading.
func Sample(ctx context.Context, a *lua.Activity, sys sut.System, began time.Time, every time.Duration, observe func(history.StockSample)) []history.StockSample {
	var out []history.StockSample
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
			s := history.StockSample{At: time.Since(began), Bucket: b, Stock: st, AvailableOnly: availableOnly}
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
