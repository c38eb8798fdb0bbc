package main

import (
	"github.com/spf13/pflag"

	"seckill-harness/runner/planner"
	"seckill-harness/runner/sut"
)

// waitFlags are --wait-replicas and --wait-timeout: the reserve option
// that sends WAIT after each ACCEPTED (see sut.WaitPolicy). Given, they
// override a scenario's wait: section.
type waitFlags struct {
	policy                  sut.WaitPolicy
	replicasSet, timeoutSet func() bool
}

func (w *waitFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&w.policy.Replicas, "wait-replicas", 0, "after each ACCEPTED send WAIT N on the connection that ran reserve.lua and record whether N replicas confirmed it (report.json wait, invariant I10); the client's latency includes the WAIT. 0: no WAIT")
	fs.DurationVar(&w.policy.Timeout, "wait-timeout", sut.DefaultWaitTimeout, "WAIT's timeout with --wait-replicas (positive)")
	w.replicasSet = func() bool { return fs.Changed("wait-replicas") }
	w.timeoutSet = func() bool { return fs.Changed("wait-timeout") }
}

// over puts the given flags into ov: they replace the scenario's wait: fields.
func (w *waitFlags) over(ov planner.Overrides) planner.Overrides {
	if w.replicasSet != nil && w.replicasSet() {
		ov.WaitReplicas = &w.policy.Replicas
	}
	if w.timeoutSet != nil && w.timeoutSet() {
		ov.WaitTimeout = &w.policy.Timeout
	}
	return ov
}
