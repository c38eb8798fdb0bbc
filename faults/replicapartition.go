package faults

// replica-partition: the target's master's replicas stop receiving the
// replication stream. The master's replication proxy (a local cluster
// started with replication proxies) is disabled: the replicas' links drop
// and their reconnections are refused, while the master keeps serving
// clients (through their own proxies) and keeps acknowledging writes, and
// the cluster bus stays up, so nothing fails over. Every write
// acknowledged meanwhile exists on the master only: if the master dies
// now and a replica is promoted, those writes are lost. Heal re-enables
// the proxy and waits until the replicas are linked again and caught up
// with the master's offset at the heal. Evidence: offsets at inject and
// heal, the largest lag in bytes, the link states seen, when the replicas
// caught up.

import (
	"context"
)

const kindReplicaPartition = "replica-partition"

var replicaPartitionKind = Spec{
	Kind:   kindReplicaPartition,
	Help:   "cut the replication stream from the target's master to its replicas (the master keeps acknowledging writes); needs a cluster with replication proxies",
	Params: []Param{TargetParam},
	Rules:  replicationRules(),
	Build:  newReplicaPartition,
}

type replicaPartitionFault struct {
	replFault
	disabled bool // guarded by mu
}

var _ Fault = (*replicaPartitionFault)(nil)

func newReplicaPartition(v Values) (Fault, error) {
	return &replicaPartitionFault{replFault: replFault{kind: kindReplicaPartition, target: v.Target()}}, nil
}

func (f *replicaPartitionFault) Inject(ctx context.Context, env *Env) error {
	link, err := f.begin(ctx, env)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := link.toxics.Disable(link.master.Addr); err != nil {
		return f.failed("", err)
	}
	f.disabled = true
	env.logf("fault %s: replication stream from %s to %v cut (its replication proxy disabled)", kindReplicaPartition, link.master.Addr, nodeAddrs(link.replicas))
	return nil
}

func (f *replicaPartitionFault) Heal(ctx context.Context, env *Env) error {
	f.mu.Lock()
	if f.disabled {
		master := f.watch.link.master.Addr
		if err := f.watch.link.toxics.Enable(master); err != nil {
			err = f.failed("heal: ", err)
			f.mu.Unlock()
			return err
		}
		f.disabled = false
		env.logf("fault %s: replication proxy of %s re-enabled", kindReplicaPartition, master)
	}
	f.mu.Unlock()
	return f.watch.healed(ctx, env, kindReplicaPartition)
}

func (f *replicaPartitionFault) Evidence() map[string]any {
	return f.evidence(map[string]any{
		"mechanism": "the master's replication proxy disabled (replicas cut off the stream; clients and cluster bus untouched)",
	})
}
