package faults

// replica-lag: latency and/or a bandwidth limit on the replication stream
// from the target's master to its replicas, and on nothing else: the
// toxics sit on the downstream of the master's replication proxy (a local
// cluster started with replication proxies), while clients reach the
// master through their own proxies and the cluster bus is direct. The
// replica falls behind by what the toxic implies (about the write rate ×
// latency, or whatever exceeds rate); acknowledged writes not yet on the
// replica are lost if the master dies now. Heal removes the toxics and
// waits until the replicas have caught up with the master's offset at the
// heal. Evidence: the offsets at inject and heal, the largest lag in
// bytes, the link states seen, when the replicas caught up.

import (
	"context"
	"errors"
	"strings"

	"seckill-harness/compose"
)

const kindReplicaLag = "replica-lag"

var replicaLagKind = Spec{
	Kind:   kindReplicaLag,
	Help:   "delay and/or throttle the replication stream from the target's master to its replicas (client traffic untouched); needs a cluster with replication proxies",
	Params: []Param{TargetParam, replicaLagLatency.Param, replicaLagJitter.Param, replicaLagRate.Param},

	Rules: replicationRules(),
	Build: newReplicaLag,
}

type replicaLagFault struct {
	replFault
	latency, jitter, rate int64
	toxics                []string // names added to the master's replication proxy; guarded by mu
	replaced              bool     // heal replaced the proxy (its stream reconnected); guarded by mu
}

var _ Fault = (*replicaLagFault)(nil)

var (
	replicaLagLatency = intParam("latency", 500, 0, 600_000, "milliseconds", "added delay of the stream in milliseconds").
				doc("500 (when rate is not given), else 0")
	replicaLagJitter = intParam("jitter", 0, 0, 600_000, "milliseconds", "± random spread of the delay in milliseconds")
	replicaLagRate   = intParam("rate", 0, 0, 1<<40, "KB/s", "bandwidth of the stream in KB/s (>= 1 to limit)").doc("0 (no limit)")
)

func newReplicaLag(v Values) (Fault, error) {
	f := &replicaLagFault{replFault: replFault{kind: kindReplicaLag, target: v.Target()},
		latency: replicaLagLatency.Of(v), jitter: replicaLagJitter.Of(v), rate: replicaLagRate.Of(v)}
	if lat, given := v.Given(replicaLagLatency.Param); f.rate > 0 && (!given || strings.TrimSpace(lat) == "") {
		f.latency = 0
	}
	if f.latency == 0 && f.rate == 0 {
		return nil, errors.New("latency=0 and no rate: nothing would slow the stream; give latency=<ms> and/or rate=<KB/s>")
	}
	return f, nil
}

func (f *replicaLagFault) Inject(ctx context.Context, env *Env) error {
	link, err := f.begin(ctx, env)
	if err != nil {
		return err
	}
	var toxics []compose.Toxic
	if f.latency > 0 {
		toxics = append(toxics, compose.Toxic{Name: "replica-lag-latency", Type: "latency", Stream: "downstream",
			Attributes: map[string]any{"latency": f.latency, "jitter": f.jitter}})
	}
	if f.rate > 0 {
		toxics = append(toxics, compose.Toxic{Name: "replica-lag-bandwidth", Type: "bandwidth", Stream: "downstream",
			Attributes: map[string]any{"rate": f.rate}})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range toxics {
		if err := link.toxics.AddToxic(link.master.Addr, t); err != nil {
			return f.failed("", err)
		}
		f.toxics = append(f.toxics, t.Name)
	}
	env.logf("fault %s: replication stream from %s to %v: latency %d±%d ms, rate %d KB/s", kindReplicaLag, link.master.Addr, nodeAddrs(link.replicas), f.latency, f.jitter, f.rate)
	return nil
}

func (f *replicaLagFault) Heal(ctx context.Context, env *Env) error {
	f.mu.Lock()
	var errs []error
	link := f.watch.link
	if r, ok := link.toxics.(compose.ToxicReplacer); ok && len(f.toxics) > 0 {
		// Not RemoveToxic: toxiproxy can hang for good removing a latency
		// toxic from a stream whose replica went away meanwhile (promoted
		// by a failover, killed) while the toxic still held data for it.
		if err := r.Replace(link.master.Addr); err != nil {
			errs = append(errs, err)
		}
		f.replaced = true
	} else {
		for _, name := range f.toxics {
			if err := link.toxics.RemoveToxic(link.master.Addr, name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	f.toxics = nil
	if err := errors.Join(errs...); err != nil {
		err = f.failed("heal: ", err)
		f.mu.Unlock()
		return err
	}
	f.mu.Unlock()
	return f.watch.healed(ctx, env, kindReplicaLag)
}

func (f *replicaLagFault) Evidence() map[string]any {
	f.mu.Lock()
	heal := "toxics removed"
	if f.replaced {
		heal = "replication proxy replaced by a fresh one on the same port (toxics dropped, stream reconnected)"
	}
	f.mu.Unlock()
	return f.evidence(map[string]any{
		"heal":       heal,
		"mechanism":  "toxiproxy latency/bandwidth toxics on the downstream of the master's replication proxy (the master→replica stream only)",
		"latency_ms": f.latency,
		"jitter_ms":  f.jitter,
		"rate_kb_s":  f.rate,
	})
}
