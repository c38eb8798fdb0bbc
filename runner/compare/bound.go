package compare

import (
	"errors"
	"fmt"
	"strings"

	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// A capacity step that failed its SLO or throughput is judged on both
// sides of the stand before its rate is called the system's limit: the
// generator's (did it pace the plan?) and the system's (was the hot
// master busy, was the service time within the SLO?).
//
// A failed step is stand-bound when either holds:
//
//  1. lifecycle.StandBehind holds over the step's load: harness stalls
//     adding up to >= lifecycle.BehindShare of the window, or its threads
//     waiting for a CPU >= lifecycle.RunqueueBehindShare of it, with at
//     least one starved second. This is the rule run uses to call a
//     failed latency or throughput assertion inconclusive; nothing the
//     system under test does can stall the harness's probe or keep its
//     threads off a CPU.
//  2. The generator started at least LateBoundShare of the operations
//     late while the hot master used less than HotMasterRoom of a core,
//     and either the service time p99 stayed within the SLO (the system
//     served each operation in time and had CPU to spare: the latency
//     measured from the intended send came from operations that left
//     late) or the window had a starved second (the machine was
//     oversubscribed and the harness could not run: a service time over
//     the SLO from a master that idled is the processes waiting for the
//     shared CPUs, not the master's work). Late starts alone are not
//     enough: a slow system holding every worker makes starts late too;
//     with the hot master near a core, or a slow service time on a
//     machine that was never starved, the step is the system's.
//
// Measured on a 2-core machine shared by the harness, six redis-servers
// and other jobs (load average 6 to 14): a 16-bucket step at 3000 ops/s
// broke with service p99 24.6 ms over a 20 ms SLO, 6.9% of starts late,
// stalls 0.6% and run-queue wait 43% of the window (rule 1 does not hold),
// two starved seconds, and the hot master at 0.14 of a core: the stand's
// limit, which rule 2 names. A generator on one P beside a spinning
// goroutine fails rule 1 outright (stalls ~40% of the window).
//
// Otherwise the step is system-bound: "system: hot master at N cores,
// service p99 M ms".
const (
	// LateBoundShare is the late-start share from which the generator
	// counts as behind when the system had room: 5%, the throughput
	// shortfall a step may have and still hold.
	LateBoundShare = 0.05
	// HotMasterRoom is the hot master's CPU, in cores, under which the
	// system had room: a Redis master runs its commands on one thread, so
	// 0.8 of a core leaves a fifth of its only core idle.
	HotMasterRoom = 0.8
)

// ErrStandBound is what a capacity probe returns for a step the stand
// could not pace: SearchCapacity records the step as not held and ends the
// search there (SearchResult.StandBound), since a higher rate would only
// measure the stand.
var ErrStandBound = errors.New("the load generator fell behind its plan")

// GeneratorSide is the generator's view of a step's load (the run's host
// section over the step's window).
type GeneratorSide struct {
	// LateShare is the share of operations started late; MaxLateMs the
	// worst lateness of one.
	LateShare float64 `json:"late_share"`
	MaxLateMs float64 `json:"max_late_ms"`
	// HarnessCores is the harness process's CPU in cores (mean over the
	// seconds of the load).
	HarnessCores float64 `json:"harness_cores"`
	// StallMs is the harness's stall time in the window; RunqueueShare its
	// threads' wait for a CPU over the window's length; StarvedSeconds
	// the seconds that met the starved rule.
	StallMs        float64 `json:"stall_ms"`
	RunqueueShare  float64 `json:"runqueue_share"`
	StarvedSeconds []int64 `json:"starved_seconds"`
	// Behind is lifecycle.StandBehind's verdict on the window.
	Behind bool `json:"behind"`
}

// judgeBound fills the step's two sides and, for a step that did not hold,
// says what bound it (see LateBoundShare): StandBound and BoundBy. It reads
// the step's report (its host section) and the masters' CPU already in s.
func judgeBound(s *Step, rep *reports.Report, co CapacityOptions) {
	if spread := spreadOf(s.MasterCPU); spread != nil {
		s.HotMasterCores = spread.HotCPUPct / 100
	}
	phase := ""
	if len(rep.Phases) > 0 {
		phase = rep.Phases[0].Name
	}
	ev, behind := lifecycle.StandBehind(rep, phase)
	if ev != nil {
		g := &GeneratorSide{LateShare: ev.LateShare, StallMs: ev.StallMs, RunqueueShare: ev.RunqueueShare,
			StarvedSeconds: ev.StarvedSeconds, Behind: behind}
		var cpu float64
		n := 0
		for _, sec := range rep.Host.Seconds {
			// A second belongs to the window when its middle does (as in lifecycle).
			if mid := float64(sec.TS) + 0.5; mid < ev.WindowS[0] || mid >= ev.WindowS[1] {
				continue
			}
			g.MaxLateMs = max(g.MaxLateMs, sec.MaxLateMs)
			cpu += sec.HarnessCPUShare
			n++
		}
		if n > 0 {
			g.HarnessCores = cpu / float64(n) * float64(rep.Host.Cores)
		}
		s.Generator = g
	}
	if s.Held {
		return
	}
	late := 0.0
	if s.ops > 0 {
		late = float64(s.LateStarts) / float64(s.ops)
	}
	if s.Generator != nil {
		late = max(late, s.Generator.LateShare)
	}
	starved := s.Generator != nil && len(s.Generator.StarvedSeconds) > 0
	room := len(s.MasterCPU) > 0 && s.HotMasterCores < HotMasterRoom &&
		(s.ServiceP99Ms <= float64(co.SloP99.Microseconds())/1000 || starved)
	if behind || (late >= LateBoundShare && room) {
		s.StandBound = true
		s.BoundBy = fmt.Sprintf("stand: generator late %.0f%%", 100*late)
		if s.Generator != nil && behind {
			s.BoundBy += fmt.Sprintf(", stalls %.0f ms, run-queue %.0f%%", s.Generator.StallMs, 100*s.Generator.RunqueueShare)
		}
		return
	}
	if len(s.MasterCPU) == 0 {
		s.BoundBy = "system (master CPU not read)"
		return
	}
	s.BoundBy = fmt.Sprintf("system: hot master at %.2f cores, service p99 %.2f ms", s.HotMasterCores, s.ServiceP99Ms)
}

// boundOf is what ended a search: the stand-bound step, else the step at
// the lowest rate that broke ("" and false when nothing broke).
func boundOf(sr *SearchResult[Step]) (string, bool) {
	for _, ss := range sr.Steps {
		if sr.StandBound > 0 && ss.Step.StandBound && ss.Rate == sr.StandBound && ss.Phase != PhaseConfirm {
			return ss.Step.BoundBy, true
		}
	}
	for _, ss := range sr.Steps {
		if !ss.Held && ss.Rate == sr.Broke {
			return ss.Step.BoundBy, false
		}
	}
	return "", false
}

// standBoundNote is a sentence per stand-bound row of a compare
// --capacity: the system's limit was not reached there, its capacity and
// projection are lower bounds ("" when no row is stand-bound).
func standBoundNote(rows []Row) string {
	var b strings.Builder
	for _, r := range rows {
		if r.Found == nil || !r.StandBound {
			continue
		}
		fmt.Fprintf(&b, " %s, %d bucket(s): the system's limit was not reached: ", r.Path, r.Buckets)
		if r.CapacityOpsPerS > 0 {
			fmt.Fprintf(&b, "the stand could pace at most %.0f ops/s (%s); capacity and projection are lower bounds.", r.CapacityOpsPerS, r.BoundBy)
		} else {
			fmt.Fprintf(&b, "the stand could not pace the lowest rate tried (%s).", r.BoundBy)
		}
	}
	return b.String()
}
