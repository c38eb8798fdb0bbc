package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	"seckill-harness/faults"
	"seckill-harness/reports"
	"seckill-harness/samplers/host"
)

// Host starvation is named, never blamed on the path under test: a latency
// or throughput assertion that fails while the stand could not sustain the
// plan is reported inconclusive, with the evidence, instead of fail.
// Invariants and the evidence rules are never inconclusive.

// BehindShare is the share of a window's length the harness may stall
// before the load generator counts as having fallen behind its plan: 1%,
// the tail a p99 bound leaves (stalls covering 1% of the window can alone
// delay the slowest 1% of its operations). Late starts are evidence, not
// the test: a slow path under test that holds every worker makes starts
// late too (a paused master, a failover), and that is the path's finding.
// The stall probe is a goroutine that only sleeps: nothing the path under
// test does can make it late, only the host.
const BehindShare = 0.01

// RunqueueBehindShare is the other sign, from the kernel: the harness's
// threads waited for a CPU (schedstat run-queue time, summed over threads)
// for at least 60% of the window's length. A slow path under test makes the
// harness wait on the network, not for a CPU. Measured on a 2-core machine
// that also runs the local cluster: 0.29-0.34 in quiet runs (a master
// paused by hand for 5 s included), 0.60-1.30 with two or four busy loops
// holding the cores, when flash-sale's p99 failed with stalls under 1%.
const RunqueueBehindShare = 0.6

// InconclusiveRule is the rule, as each inconclusive entry states it.
var InconclusiveRule = fmt.Sprintf("a failed latency or throughput assertion is inconclusive when, in the window it judges, "+
	"the load generator fell behind its plan (harness stalls adding up to >= %g%% of the window, or its threads waiting for a CPU >= %g%% of it: "+
	"neither is something the path under test can cause) and at least one second of the window was starved (%s)", BehindShare*100, RunqueueBehindShare*100, host.StarvedRule)

// judgeInconclusive turns each failed latency or throughput assertion
// (Assertion.Judges set) whose window the stand could not sustain into
// status inconclusive, with the rule and the evidence. It reads only the
// report (its host section, timeseries and phases); without a host
// section nothing changes.
func judgeInconclusive(rep *reports.Report) {
	if rep.Host == nil {
		return
	}
	for i := range rep.Assertions {
		a := &rep.Assertions[i]
		if a.Status != reports.StatusFail || a.Judges == "" {
			continue
		}
		from, to := windowOf(rep, a.Phase)
		ev, ok := starvation(rep, from, to)
		if !ok {
			continue
		}
		a.Status, a.Inconclusive = reports.StatusInconclusive, ev
		a.Detail = strings.TrimPrefix(a.Detail+"; "+inconclusiveText(ev), "; ")
	}
}

// windowOf is the window a phase's figures cover ("" or a phase not in
// the report: the whole run), in seconds of the load.
func windowOf(rep *reports.Report, phase string) (from, to float64) {
	if phase != "" {
		if i := slices.IndexFunc(rep.Phases, func(p reports.Phase) bool { return p.Name == phase }); i >= 0 {
			return rep.Phases[i].StartS, rep.Phases[i].EndS
		}
	}
	return 0, rep.DurationS
}

// StandBehind applies InconclusiveRule to the window of rep's phase
// ("" or a phase not in the report: the whole load): the evidence, and
// whether the load generator fell behind its plan there with a starved
// second (the rule run's inconclusive verdicts use). Without a host
// section it is (nil, false): nothing says the stand fell behind.
func StandBehind(rep *reports.Report, phase string) (*reports.Inconclusive, bool) {
	if rep == nil || rep.Host == nil {
		return nil, false
	}
	from, to := windowOf(rep, phase)
	return starvation(rep, from, to)
}

// starvation gathers the evidence of [from, to) and says whether it meets
// InconclusiveRule.
func starvation(rep *reports.Report, from, to float64) (*reports.Inconclusive, bool) {
	ev := &reports.Inconclusive{Rule: InconclusiveRule, WindowS: [2]float64{from, to}, StarvedSeconds: []int64{}}
	// A second belongs to the window when its middle does.
	in := func(ts int64) bool { return float64(ts)+0.5 >= from && float64(ts)+0.5 < to }
	for _, s := range rep.Timeseries {
		if in(s.TS) {
			ev.Ops += s.Ops
		}
	}
	var runqueueMs float64
	for _, s := range rep.Host.Seconds {
		if !in(s.TS) {
			continue
		}
		if s.HarnessRunqueueWaitMs != nil {
			runqueueMs += *s.HarnessRunqueueWaitMs
		}
		ev.LateStarts += s.LateStarts
		if !s.Starved {
			continue
		}
		ev.StarvedSeconds = append(ev.StarvedSeconds, s.TS)
		ev.MaxLoad1, ev.MaxProcsRunning = max(ev.MaxLoad1, s.Load1), max(ev.MaxProcsRunning, s.ProcsRunning)
		if s.StealShare != nil {
			ev.MaxStealShare = max(ev.MaxStealShare, *s.StealShare)
		}
		if s.HarnessRunqueueWaitMs != nil {
			ev.HarnessRunqueueWaitMs += *s.HarnessRunqueueWaitMs
		}
		ev.STWMs += s.STWMs
	}
	for _, st := range rep.Host.Stalls {
		a, b := st.AtS, st.AtS+st.DurationMs/1000
		ev.StallMs += max(0, min(b, to)-max(a, from)) * 1000
	}
	if ev.Ops > 0 {
		ev.LateShare = float64(ev.LateStarts) / float64(ev.Ops)
	}
	if to > from {
		ev.RunqueueShare = runqueueMs / 1000 / (to - from)
	}
	behind := to > from && (ev.StallMs/1000 >= BehindShare*(to-from) || ev.RunqueueShare >= RunqueueBehindShare)
	return ev, behind && len(ev.StarvedSeconds) > 0
}

// inconclusiveText is the evidence in one line of a summary.
func inconclusiveText(ev *reports.Inconclusive) string {
	return fmt.Sprintf("INCONCLUSIVE: the stand could not sustain the plan in [%.1f, %.1f)s: %d of %d operations started late (%.1f%%), %.0f ms of harness stalls, "+
		"harness threads waiting for a CPU %.0f%% of the window; "+
		"starved seconds %v (load1 up to %.2f, procs_running up to %d, steal up to %.1f%%, harness run-queue wait %.0f ms, STW %.1f ms)",
		ev.WindowS[0], ev.WindowS[1], ev.LateStarts, ev.Ops, 100*ev.LateShare, ev.StallMs, 100*ev.RunqueueShare,
		ev.StarvedSeconds, ev.MaxLoad1, ev.MaxProcsRunning, 100*ev.MaxStealShare, ev.HarnessRunqueueWaitMs, ev.STWMs)
}

// MissedRule is the rule of a fault that missed the system under test, as
// its inconclusive assertion states it. It applies to the faults that aim
// at Redis masters by where the sale is (faults.Aimed with bySale: a
// failover, partition or slot-migration at hot-master, hot-replica or the
// hot slots); an explicit target (node=, slot=, all-masters), a replica,
// a service process or the pipeline is acted on by design and is outside it.
var MissedRule = fmt.Sprintf("a fault aimed where the system under test keeps its sale whose masters served none of the system's Redis traffic in the %s before its injection did not exercise the system: the run is inconclusive, never a pass", faults.ObserveWindow)

// judgeMissed (MissedRule) adds, for each fault that missed the system under test
// (reports.FaultAim.Missed, set by aimFaults), an inconclusive assertion
// naming the miss: with no failed check, the run exits 3, never 0.
func judgeMissed(rep *reports.Report) {
	for _, f := range rep.Faults {
		if f.Aim == nil || f.Aim.Missed == "" {
			continue
		}
		name := f.Name
		if name == "" {
			name = f.Kind
		}
		rep.Assertions = append(rep.Assertions, reports.Assertion{Name: "fault " + name + " reached the system under test",
			Status: reports.StatusInconclusive, Observed: 0, Detail: f.Aim.Missed})
	}
}
