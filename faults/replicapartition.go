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
	"fmt"
	"sync"
)

const kindReplicaPartition = "replica-partition"

func init() {
	Register(Spec{
		Kind:   kindReplicaPartition,
		Help:   "cut the replication stream from the target's master to its replicas (the master keeps acknowledging writes); needs a cluster with replication proxies",
		Params: []Param{TargetParam},
		New:    newReplicaPartition,
	})
}

type replicaPartitionFault struct {
	target Target

	mu       sync.Mutex
	disabled bool
	errs     []string
	watch    replWatch
}

var _ Fault = (*replicaPartitionFault)(nil)

func newReplicaPartition(params map[string]string) (Fault, error) {
	params = copyParams(params)
	target, err := ParseTarget(params)
	if err != nil {
		return nil, err
	}
	if err := CheckParams(params); err != nil {
		return nil, err
	}
	return &replicaPartitionFault{target: target}, nil
}

func (f *replicaPartitionFault) Kind() string { return kindReplicaPartition }

func (f *replicaPartitionFault) Target() string {
	f.watch.mu.Lock()
	defer f.watch.mu.Unlock()
	if f.watch.injected {
		return f.target.String() + " (stream from " + f.watch.link.master.Addr + ")"
	}
	return f.target.String()
}

func (f *replicaPartitionFault) Inject(ctx context.Context, env *Env) error {
	link, err := resolveReplLink(ctx, env, f.target, kindReplicaPartition)
	if err != nil {
		return err
	}
	f.watch.start(env, link)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := link.toxics.Disable(link.master.Addr); err != nil {
		f.errs = append(f.errs, err.Error())
		return fmt.Errorf("fault %s: %w", kindReplicaPartition, err)
	}
	f.disabled = true
	env.logf("fault %s: replication stream from %s to %v cut (its replication proxy disabled)", kindReplicaPartition, link.master.Addr, nodeAddrs(link.replicas))
	return nil
}

func (f *replicaPartitionFault) Heal(ctx context.Context, env *Env) error {
	f.mu.Lock()
	if f.disabled {
		link := f.watch.link
		if err := link.toxics.Enable(link.master.Addr); err != nil {
			f.errs = append(f.errs, err.Error())
			f.mu.Unlock()
			return fmt.Errorf("fault %s: heal: %w", kindReplicaPartition, err)
		}
		f.disabled = false
		env.logf("fault %s: replication proxy of %s re-enabled", kindReplicaPartition, link.master.Addr)
	}
	f.mu.Unlock()
	return f.watch.healed(ctx, env, kindReplicaPartition)
}

func (f *replicaPartitionFault) Evidence() map[string]any {
	ev := map[string]any{
		"mechanism": "the master's replication proxy disabled (replicas cut off the stream; clients and cluster bus untouched)",
		"target":    f.target.String(),
	}
	f.watch.evidence(ev)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) > 0 {
		ev["errors"] = append([]string(nil), f.errs...)
	}
	return ev
}
