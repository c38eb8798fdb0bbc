package cmdline

import (
	"github.com/spf13/pflag"

	"seckill-harness/runner/planner"
	"seckill-harness/sut"
)

// Wait are --wait-replicas and --wait-timeout (run, compare): the reserve
// option that sends WAIT after each ACCEPTED (see sut.WaitPolicy). Given,
// they override a scenario's wait: section (Over).
type Wait struct {
	policy                  sut.WaitPolicy
	replicasSet, timeoutSet func() bool
}

// WaitFlags registers --wait-replicas and --wait-timeout on fs into w.
func WaitFlags(fs *pflag.FlagSet, w *Wait) {
	fs.IntVar(&w.policy.Replicas, "wait-replicas", 0, "after each ACCEPTED send WAIT N on the connection that ran reserve.lua and record whether N replicas confirmed it (report.json wait, invariant I10); the client's latency includes the WAIT. 0: no WAIT")
	fs.DurationVar(&w.policy.Timeout, "wait-timeout", sut.DefaultWaitTimeout, "WAIT's timeout with --wait-replicas (positive)")
	w.replicasSet = func() bool { return fs.Changed("wait-replicas") }
	w.timeoutSet = func() bool { return fs.Changed("wait-timeout") }
}

// Over returns ov with the flags given on the command line put into it:
// they replace the scenario's wait: fields; a flag not given leaves its
// field as it was (so does a Wait never registered).
func (w *Wait) Over(ov planner.Overrides) planner.Overrides {
	if w.replicasSet != nil && w.replicasSet() {
		ov.WaitReplicas = &w.policy.Replicas
	}
	if w.timeoutSet != nil && w.timeoutSet() {
		ov.WaitTimeout = &w.policy.Timeout
	}
	return ov
}
