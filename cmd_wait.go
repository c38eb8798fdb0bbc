package main

import (
	"github.com/spf13/pflag"

	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
)

// waitFlags are --wait-replicas and --wait-timeout: the reserve option
// that sends WAIT after each ACCEPTED (see runner.WaitPolicy). Given, they
// override a scenario's wait: section.
type waitFlags struct {
	policy                  runner.WaitPolicy
	replicasSet, timeoutSet func() bool
}

func (w *waitFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&w.policy.Replicas, "wait-replicas", 0, "after each ACCEPTED send WAIT N on the connection that ran reserve.lua and record whether N replicas confirmed it (report.json wait, invariant I10); the client's latency includes the WAIT. 0: no WAIT")
	fs.DurationVar(&w.policy.Timeout, "wait-timeout", runner.DefaultWaitTimeout, "WAIT's timeout with --wait-replicas (positive)")
	w.replicasSet = func() bool { return fs.Changed("wait-replicas") }
	w.timeoutSet = func() bool { return fs.Changed("wait-timeout") }
}

// applyTo puts the given flags over the plan's (the scenario's) policy.
func (w *waitFlags) applyTo(p *lifecycle.Plan) {
	if w.replicasSet == nil {
		return
	}
	if w.replicasSet() {
		p.Wait.Replicas = w.policy.Replicas
		if p.Wait.Timeout == 0 {
			p.Wait.Timeout = w.policy.Timeout
		}
	}
	if w.timeoutSet() {
		p.Wait.Timeout = w.policy.Timeout
	}
	if p.Wait.Replicas == 0 && !w.timeoutSet() {
		p.Wait.Timeout = 0
	}
}
