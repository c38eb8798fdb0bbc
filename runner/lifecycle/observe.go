package lifecycle

import (
	"context"
	"fmt"
	"time"

	"seckill-harness/history"
	"seckill-harness/metrics"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/samplers/host"
	"seckill-harness/samplers/servers"
)

// observe starts what watches the run beside the load: the live metrics
// server (with --metrics-addr), the server-side sampler (every node of
// the stand's cluster, and the load client's pool, once per second, off
// the cluster's admin connections) and the host sampler (the machine and
// this process, once per second, and the stall probe: report.json's host). driveLoad stops the sampler when the
// load ends; assemble adds its end-of-run reads to the report's servers
// section. The metrics server stops on the way out.
func (x *execution) observe(ctx context.Context) error {
	if addr := x.out.MetricsAddr; addr != "" {
		live, err := metrics.Listen(addr)
		if err != nil {
			return err
		}
		x.obs.live = live
		x.cleanup = append(x.cleanup, func() { _ = live.Close() })
		x.out.logger().Info(fmt.Sprintf("metrics: http://%s/metrics", live.Addr()))
		if x.out.OnMetrics != nil {
			x.out.OnMetrics(live.Addr())
		}
	}
	x.obs.servers = servers.Start(ctx, x.stand.Cluster, servers.Options{Pool: x.stand.Client, OnRound: x.onServerRound})
	x.cleanup = append(x.cleanup, x.obs.servers.Stop)
	if x.fault.tl != nil {
		x.fault.tl.Env.Traffic = x.obs.servers // the observed target, and the faults' traffic share
	}
	x.obs.host = host.Start()
	x.cleanup = append(x.cleanup, x.obs.host.Stop)
	return nil
}

// lateStarts lists the operations the pacer started more than the run's
// late threshold after their intended time (the host section's lateness).
func lateStarts(res *runner.Result) []host.LateStart {
	var out []host.LateStart
	for _, o := range res.History.All() {
		if o.Outcome == history.OutcomeDropped {
			continue
		}
		if late := o.Start - o.Intended; late > res.Config.LateThreshold {
			out = append(out, host.LateStart{Intended: o.Intended, Late: late})
		}
	}
	return out
}

// onServerRound hands each second's node samples to the live metrics and
// the caller's hook.
func (x *execution) onServerRound(nodes map[string]reports.NodeSample, pool *reports.PoolSecond) {
	if x.obs.live != nil {
		x.obs.live.ObserveServers(nodes, pool)
		if x.fault.tl != nil {
			x.obs.live.SetActiveFaults(x.fault.tl.Active())
		}
		if x.pipe.pl != nil {
			st := x.pipe.pl.Stats()
			x.obs.live.SetSendPending(max(0, st.Send.Sends-st.Send.Acked-st.Send.UnknownSends-st.Send.SendErrors))
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			if age, err := x.pipe.pl.OldestSendPendingAge(ctx); err == nil {
				x.obs.live.SetSendPendingOldestAge(age)
			}
			cancel()
		}
	}
	if x.out.OnServers != nil {
		x.out.OnServers(nodes, pool)
	}
}

// liveProgress is the progress hook of the live metrics (the phase), nil
// without them.
func (x *execution) liveProgress() func(runner.Progress) {
	if x.obs.live == nil {
		return nil
	}
	return func(p runner.Progress) { x.obs.live.SetPhase(p.Phase) }
}

// liveOptions feed every operation and stock reading to the live metrics.
func (x *execution) liveOptions() []runner.Option {
	if x.obs.live == nil {
		return nil
	}
	return []runner.Option{runner.WithOpObserver(x.obs.live.ObserveOp), runner.WithStockObserver(x.obs.live.ObserveStock)}
}

// serversSection finishes the sampler: the slow log, latency monitor and
// script statistics of this run, read after the cluster settled.
func (x *execution) serversSection(ctx context.Context) *reports.Servers {
	if x.obs.servers == nil || x.load.res == nil {
		return nil
	}
	return x.obs.servers.Finish(ctx, x.load.res.Began)
}
