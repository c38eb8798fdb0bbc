package lifecycle

import (
	"context"

	"seckill-harness/reports"
	"seckill-harness/servers"
)

// observe starts the server-side sampler beside the load: every node of
// the stand's cluster, and the load client's pool, once per second, off
// the cluster's admin connections. driveLoad stops it when the load ends;
// assemble adds its end-of-run reads and puts the whole in the report's
// servers section.
func (x *execution) observe(ctx context.Context) error {
	x.servers = servers.Start(ctx, x.stand.Cluster, servers.Options{Pool: x.stand.Client, OnRound: x.out.OnServers})
	x.cleanup = append(x.cleanup, x.servers.Stop)
	return nil
}

// serversSection finishes the sampler: the slow log, latency monitor and
// script statistics of this run, read after the cluster settled.
func (x *execution) serversSection(ctx context.Context) *reports.Servers {
	if x.servers == nil || x.res == nil {
		return nil
	}
	return x.servers.Finish(ctx, x.res.Began)
}
