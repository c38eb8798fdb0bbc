package compare

import (
	"math"
	"strings"
	"testing"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// stepReport is a hand-built report of a 4 s step at 1000 ops/s whose p99
// (from the intended send) is 30 ms, service p99 svcP99 ms, with late
// late starts, and a host section whose seconds are starved (machine
// oversubscribed and the harness stalling 200 ms a second) or quiet.
func stepReport(starved bool, late int64, svcP99 float64) *reports.Report {
	return stepReportStalling(starved, 200, late, svcP99)
}

// stepReportStalling is stepReport with stallMs of stall per starved second.
func stepReportStalling(starved bool, stallMs float64, late int64, svcP99 float64) *reports.Report {
	rep := &reports.Report{Passed: true, DurationS: 4, ThroughputOpsPerS: 1000,
		LatencyMs: reports.Percentiles{P50: 2, P99: 30}, ServiceTimeMs: reports.Percentiles{P50: 1, P99: svcP99},
		Phases: []reports.Phase{{Name: "1000 ops/s", StartS: 0, EndS: 4, Ops: 4000}},
		Host:   &reports.Host{Cores: 2, Seconds: []reports.HostSecond{}, Stalls: []reports.Stall{}}}
	rep.Totals.Ops, rep.Totals.LateStarts = 4000, late
	rep.Totals.Outcomes = map[string]int64{"OK": 4000}
	for ts := int64(0); ts < 4; ts++ {
		rep.Timeseries = append(rep.Timeseries, reports.Second{TS: ts, Ops: 1000})
		sec := reports.HostSecond{TS: ts, IntervalS: 1, Load1: 1, ProcsRunning: 1, HarnessCPUShare: 0.2, LateStarts: late / 4, MaxLateMs: 3}
		if starved {
			sec.Load1, sec.ProcsRunning, sec.StallMs, sec.MaxLateMs = 4.5, 5, stallMs, 180
			rep.Host.Stalls = append(rep.Host.Stalls, reports.Stall{AtS: float64(ts) + 0.1, DurationMs: stallMs})
		}
		sec.Starved = sec.ProcsRunning > rep.Host.Cores && sec.StallMs > 0
		rep.Host.Seconds = append(rep.Host.Seconds, sec)
	}
	return rep
}

func judged(rep *reports.Report, hotCores float64) Step {
	co := CapacityOptions{SloP99: 10 * time.Millisecond, MaxErrorRatio: 0.01}
	s := stepOf(1000, &lifecycle.Result{Report: rep}, "", co)
	s.MasterCPU = []MasterCPU{{Addr: "127.0.0.1:1", Cores: hotCores, CPUSecs: 4 * hotCores}, {Addr: "127.0.0.1:2", Cores: 0.05}}
	judgeBound(&s, rep, co)
	return s
}

// A step that broke its p99 in a starved window (stalls 20% of it) is the
// stand's, whatever the masters did; the same step in a quiet window with
// the hot master at a core is the system's; late starts with a master
// that had room and a service time within the SLO are the stand's; late
// starts with the service time over the SLO are the system's.
func TestCapacityStepBoundBy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		starved   bool
		late      int64
		svcP99    float64
		hot       float64
		stand     bool
		boundWant string
	}{
		{"starved window", true, 40, 2, 0.3, true, "stand: generator late"},
		{"starved window, hot master busy", true, 40, 2, 0.98, true, "stand: generator late"},
		{"quiet window, hot master at a core", false, 0, 25, 0.99, false, "system: hot master at 0.99 cores, service p99 25.00 ms"},
		{"quiet window, late starts, master with room", false, 1200, 2, 0.4, true, "stand: generator late 30%"},
		{"quiet window, late starts, service over the SLO", false, 1200, 25, 0.4, false, "system: hot master at 0.40 cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := judged(stepReport(tc.starved, tc.late, tc.svcP99), tc.hot)
			if s.Held {
				t.Fatalf("step held with p99 30 ms > 10 ms SLO")
			}
			if s.StandBound != tc.stand || !strings.HasPrefix(s.BoundBy, tc.boundWant) {
				t.Fatalf("stand_bound %v, bound_by %q; want %v, %q (generator %+v)", s.StandBound, s.BoundBy, tc.stand, tc.boundWant, s.Generator)
			}
			if s.Generator == nil || s.Generator.Behind != tc.starved {
				t.Fatalf("generator side %+v: behind want %v", s.Generator, tc.starved)
			}
			if tc.starved && (math.Abs(s.Generator.StallMs-800) > 0.01 || s.Generator.MaxLateMs != 180 || len(s.Generator.StarvedSeconds) != 4) {
				t.Errorf("generator side %+v: want 800 ms of stalls, worst lateness 180 ms, 4 starved seconds", s.Generator)
			}
			if s.Generator.HarnessCores < 0.39 || s.Generator.HarnessCores > 0.41 {
				t.Errorf("harness cores %.2f, want 0.40 (0.2 of 2 cores)", s.Generator.HarnessCores)
			}
		})
	}
	// Starved seconds whose stalls stay under 1% of the window (rule 1
	// does not hold): late starts, a slow service time and a master that
	// idled are the stand's; the same with the hot master at a core, the
	// system's.
	for _, tc := range []struct {
		hot   float64
		stand bool
	}{{0.14, true}, {0.95, false}} {
		s := judged(stepReportStalling(true, 5, 280, 25), tc.hot)
		if s.Generator == nil || s.Generator.Behind || s.StandBound != tc.stand {
			t.Fatalf("starved seconds, stalls 0.5%%, late 7%%, service p99 25 ms, hot master %.2f: stand_bound %v (%q), generator %+v; want %v",
				tc.hot, s.StandBound, s.BoundBy, s.Generator, tc.stand)
		}
	}
	// A step that held is bound by nothing, starved or not.
	rep := stepReport(true, 40, 2)
	rep.LatencyMs.P99 = 5
	if s := judged(rep, 0.3); !s.Held || s.StandBound || s.BoundBy != "" {
		t.Fatalf("held step: held %v, stand_bound %v, bound_by %q", s.Held, s.StandBound, s.BoundBy)
	}
}

// The report's capacity section carries each step's bound as compare.json's
// steps do: a stand-bound step and a step the system broke keep their
// stand_bound and bound_by.
func TestCapacityReportStepsSayWhatBoundThem(t *testing.T) {
	stand, system := judged(stepReport(true, 40, 2), 0.3), judged(stepReport(false, 0, 30), 0.97)
	if !stand.StandBound || system.StandBound || system.BoundBy == "" {
		t.Fatalf("fixtures: stand %v %q, system %v %q", stand.StandBound, stand.BoundBy, system.StandBound, system.BoundBy)
	}
	system.Rate = 2000
	sr := &SearchResult[Step]{Steps: []SearchStep[Step]{{Step: system}, {Step: stand}}}
	cr := capacityResultOf(sr, CapacityOptions{SloP99: 10 * time.Millisecond, StepDuration: 4 * time.Second})
	for i, want := range []Step{stand, system} {
		if got := cr.Steps[i]; got.RateOpsPerS != want.Rate || got.StandBound != want.StandBound || got.BoundBy != want.BoundBy {
			t.Errorf("capacity step %d: rate %.0f stand_bound %v bound_by %q, want %.0f %v %q", i, got.RateOpsPerS, got.StandBound, got.BoundBy, want.Rate, want.StandBound, want.BoundBy)
		}
	}
}
