package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"seckill-harness/lua"
	"seckill-harness/reports"
)

// settleLimit bounds the wait for a settled cluster before t=0; past it the
// load starts anyway and the report's warm_up says what was still moving.
const settleLimit = 30 * time.Second

// warmExcluded is report.json's warm_up.excluded: the warm-up keeps the
// harness's start-up out of the figures without dropping any operation.
const warmExcluded = "no operation: the warm-up's own commands (PING, SCRIPT LOAD, SCRIPT EXISTS, INFO, and the client's COMMAND table fetch) precede t=0 and are not operations of the load; its time is outside duration_s, every latency and every timeseries second"

// warmUp readies, before t=0, everything the load will use, so that the
// first second measures the cluster and not the harness's start-up: every
// connection the load's workers will hold is dialled (through the stand's
// client, so through its proxies), the scripts are cached on every master
// and the client's command table is loaded (lua.DialConns), then the
// cluster is waited on until it is settled — no fork in progress, replicas
// online and linked
// (lua.WaitSettled, at most settleLimit). The first phase's workers are
// started before t=0 by the engine itself. What could not be readied is a
// problem in report.json's warm_up, never a harness error: the load then
// meets it on its own clock, where the report shows it.
func (x *execution) warmUp(ctx context.Context) error {
	t0 := time.Now()
	rdb := x.stand.Client
	w := &reports.WarmUp{ConnsPerMaster: min(x.plan.MaxConcurrency(), rdb.Options().PoolSize),
		WorkersBeforeT0: true, Excluded: warmExcluded}
	if _, err := lua.DialConns(ctx, rdb, x.scripts, w.ConnsPerMaster); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.Problems = append(w.Problems, err.Error())
	}
	sctx, cancel := context.WithTimeout(ctx, settleLimit)
	st, err := lua.WaitSettled(sctx, x.stand.Cluster, 0)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	w.Settled, w.SettleWaitS, w.Unsettled = st.OK, st.Waited.Seconds(), st.Unsettled
	if err != nil {
		w.Problems = append(w.Problems, err.Error())
	}
	// What the load will meet, read after the settle wait (closest to t=0).
	masters, err := lua.Warmth(ctx, rdb, x.scripts)
	if err != nil {
		w.Problems = append(w.Problems, err.Error())
	}
	for _, m := range masters {
		w.Masters = append(w.Masters, reports.WarmMaster{Addr: m.Addr, Conns: m.Conns, Scripts: len(m.Scripts)})
	}
	w.DurationS = time.Since(t0).Seconds()
	x.warm = w
	status := "settled"
	if !w.Settled {
		status = "NOT settled: " + strings.Join(w.Unsettled, "; ")
	}
	x.out.logger().Info(fmt.Sprintf("warm-up: %d connections and the scripts on each of %d masters, cluster %s (waited %.2fs); %.2fs before t=0, outside every figure",
		w.ConnsPerMaster, len(w.Masters), status, w.SettleWaitS, w.DurationS))
	for _, p := range w.Problems {
		x.out.logger().Warn(fmt.Sprintf("warm-up: %s", p))
	}
	return nil
}
