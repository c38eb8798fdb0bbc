package host

import (
	"testing"
	"time"

	"seckill-harness/reports"
)

// A real sampler over ~2.3 s: one second per whole second of the load,
// each read off /proc with its interval, the pacer's late starts placed
// in the second they were due.
func TestSamplerSecondsAlignWithTheLoad(t *testing.T) {
	s := Start()
	began := time.Now()
	s.SetOrigin(began)
	time.Sleep(2300 * time.Millisecond)
	s.Stop()
	elapsed := time.Since(began)
	h := s.Section(began, elapsed, []LateStart{{Intended: 1500 * time.Millisecond, Late: 3 * time.Millisecond}})
	if len(h.Seconds) != 3 {
		t.Fatalf("%d seconds, want 3: %+v", len(h.Seconds), h.Seconds)
	}
	for i, sec := range h.Seconds[:2] {
		if sec.TS != int64(i) || sec.IntervalS < 0.9 || sec.Load1 <= 0 || sec.MachineBusyShare+sec.MachineIdleShare <= 0 || sec.StealShare == nil {
			t.Errorf("second %d: %+v", i, sec)
		}
	}
	if h.Seconds[1].LateStarts != 1 || h.Seconds[1].MaxLateMs != 3 || h.Seconds[0].LateStarts != 0 {
		t.Errorf("late starts misplaced: %+v", h.Seconds)
	}
	if h.Cores <= 0 || h.StarvedRule == "" || h.Stalls == nil {
		t.Errorf("host %+v", h)
	}
}

func TestStarvedNeedsOversubscriptionAndAHarnessWithoutCPU(t *testing.T) {
	wait := func(v float64) *float64 { return &v }
	cases := []struct {
		name string
		sec  reports.HostSecond
		want bool
	}{
		{"loaded, harness waited 120 ms", reports.HostSecond{Load1: 5, ProcsRunning: 1, HarnessRunqueueWaitMs: wait(120)}, true},
		{"runnable > cores, a stall", reports.HostSecond{ProcsRunning: 5, StallMs: 15}, true},
		{"loaded, harness got its CPU", reports.HostSecond{Load1: 5, ProcsRunning: 5, HarnessRunqueueWaitMs: wait(2)}, false},
		{"idle machine, harness waited (its own threads)", reports.HostSecond{Load1: 0.5, ProcsRunning: 2, HarnessRunqueueWaitMs: wait(120)}, false},
		{"steal 20%, a stall", reports.HostSecond{StealShare: wait(0.2), StallMs: 30}, true},
	}
	for _, c := range cases {
		if got := Starved(c.sec, 2); got != c.want {
			t.Errorf("%s: Starved = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestStallsMergeAndCarryThePacersLateness(t *testing.T) {
	began := time.Now()
	raw := []stall{
		{start: began.Add(1000 * time.Millisecond), late: 20 * time.Millisecond},
		{start: began.Add(1010 * time.Millisecond), late: 30 * time.Millisecond}, // overlaps: one stall 1.000–1.040
		{start: began.Add(3 * time.Second), late: 12 * time.Millisecond},
		{start: began.Add(-time.Second), late: 15 * time.Millisecond}, // before the load
	}
	late := []LateStart{{Intended: 1005 * time.Millisecond, Late: 35 * time.Millisecond}, {Intended: 2 * time.Second, Late: 2 * time.Millisecond}}
	got := stallsOf(raw, began, 4*time.Second, late)
	if len(got) != 2 || got[0].AtS != 1 || got[0].DurationMs != 40 || got[0].Evidence.ProbeLateMs != 30 ||
		got[0].Evidence.LateStarts != 1 || got[0].Evidence.MaxLateMs != 35 || got[1].AtS != 3 || got[1].Evidence.LateStarts != 0 {
		t.Fatalf("stalls %+v", got)
	}
}
