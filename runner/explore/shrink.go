package explore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Trial runs one schedule and returns the invariant ids that failed (none:
// it passed); label names the trial in its report directory. An error is
// a harness error (the trial says nothing about the schedule).
type Trial func(ctx context.Context, s Schedule, label string) (failed []string, err error)

// ShrinkOptions bound a shrink.
type ShrinkOptions struct {
	// Budget is the wall time the shrink may take (trials included); the
	// smallest schedule found by then is the result.
	Budget time.Duration
	// MaxTries caps the trials (0: no cap).
	MaxTries int
	// Repeat is how many trials in a row must fail the invariant for a
	// change to be kept (0 or 1: one). A change kept on one lucky failure
	// drifts the schedule to where the failure is rare; two in a row keep
	// the minimal scenario reproducible. A change that passes once is
	// dropped at once.
	Repeat int
	// MinDuration is the shortest load a variant may have (0: 1s); the
	// explorer passes its --min-duration, so the minimal scenario stays in
	// the space it explored.
	MinDuration time.Duration
}

// ShrinkStep is one smaller variant tried.
type ShrinkStep struct {
	Change  string   `json:"change"`
	Kept    bool     `json:"kept"`   // the invariant failed in every trial: the change was kept
	Trials  int      `json:"trials"` // runs of the variant (more than one only while it kept failing)
	Failed  []string `json:"failed"` // of the last trial
	Error   string   `json:"error,omitempty"`
	Seconds float64  `json:"seconds"`
	Size    Size     `json:"size"`
}

// ShrinkResult is a finished shrink.
type ShrinkResult struct {
	Invariant string       `json:"invariant"`
	Original  Size         `json:"original"`
	Minimal   Size         `json:"minimal"`
	Steps     []ShrinkStep `json:"steps"`
	Seconds   float64      `json:"seconds"`
	// Exhausted: every smaller variant of the minimal schedule was tried
	// and passed (the result is 1-minimal over the changes explore knows);
	// false when the budget or MaxTries ran out first.
	Exhausted bool `json:"exhausted"`

	Schedule Schedule `json:"-"`
}

// variant is a smaller schedule and what was changed; key names the kind
// of change ("remove partition", "rate"), the same across passes.
type variant struct {
	key, change string
	s           Schedule
}

// Shrink reduces s, whose trial failed invariant id, by delta debugging
// over the scenario: it tries smaller variants — a fault removed, a fault
// window halved, the rate halved, half the users, a shorter load, faults
// moved earlier, a plain constant curve, no duplicates in the mix, fewer
// workers, no pipeline, one bucket — in that order, and keeps a change only when the
// trial of the variant still fails id; after each kept change it starts
// over from the smaller schedule. It stops when no variant fails id any
// more (Exhausted), or the budget or MaxTries runs out. Variants that are
// not valid scenarios (valid returns an error) are skipped without a
// trial. A harness error of a trial counts as "did not reproduce".
func Shrink(ctx context.Context, s Schedule, id string, valid func(Schedule) error, try Trial, o ShrinkOptions) *ShrinkResult {
	t0 := time.Now()
	res := &ShrinkResult{Invariant: id, Original: s.Size(), Schedule: s}
	cur := s.clone()
	tries := 0
	// Changes that did not reproduce are tried after the others in later
	// passes (still tried before the shrink ends): a fault that is needed
	// stays needed, so its removal is not re-run before every other cut.
	rejected := map[string]bool{}
	for {
		kept := false
		vs := variants(cur, max(o.MinDuration, time.Second))
		slices.SortStableFunc(vs, func(a, b variant) int { return boolCmp(rejected[a.key], rejected[b.key]) })
		for _, v := range vs {
			if ctx.Err() != nil || (o.Budget > 0 && time.Since(t0) >= o.Budget) || (o.MaxTries > 0 && tries >= o.MaxTries) {
				res.Minimal, res.Schedule, res.Seconds = cur.Size(), cur, time.Since(t0).Seconds()
				return res
			}
			if valid(v.s) != nil {
				continue
			}
			t1 := time.Now()
			st := ShrinkStep{Change: v.change, Size: v.s.Size()}
			for r := 0; r < max(o.Repeat, 1); r++ {
				tries++
				failed, err := try(ctx, v.s, fmt.Sprintf("shrink-%02d", tries))
				st.Trials++
				st.Failed, st.Kept = failed, err == nil && slices.Contains(failed, id)
				if err != nil {
					st.Error = err.Error()
				}
				if !st.Kept || ctx.Err() != nil {
					break
				}
			}
			st.Seconds = time.Since(t1).Seconds()
			res.Steps = append(res.Steps, st)
			if st.Kept {
				cur, kept = v.s, true
				break
			}
			if !strings.HasPrefix(v.key, "remove ") {
				rejected[v.key] = true // fewer faults stays the first cut tried
			}
		}
		if !kept {
			res.Exhausted = ctx.Err() == nil
			res.Minimal, res.Schedule, res.Seconds = cur.Size(), cur, time.Since(t0).Seconds()
			return res
		}
	}
}

// minFaultWindow is the shortest window the shrinker gives a fault: a
// shorter one holds less than one re-arm of a pulsing fault (every=300ms)
// and reproduced on the explorer's warm stand but not on a fresh cluster.
const minFaultWindow = 500 * time.Millisecond

// minOpsPerFaultWindow is the fewest operations (at the load's mean rate)
// the shrinker leaves inside a fault's window: with fewer, whether a
// trial fails is mostly luck — a 400 ms disconnect-before-reply at 18 ops/s
// (7 operations in its window) failed I5 twice in a row while shrinking
// and then 0 times in 3 cold re-runs of the minimal scenario.
const minOpsPerFaultWindow = 25

// faultWindowsHold reports whether every fault window of c holds at least
// minOpsPerFaultWindow operations at c's mean rate.
func faultWindowsHold(c *Schedule) bool {
	if c.Load.Duration <= 0 {
		return true
	}
	mean := c.Demand() / c.Load.Duration.Seconds()
	for _, f := range c.Faults {
		w := f.For
		if w <= 0 {
			w = c.Load.Duration - f.At
		}
		if mean*w.Seconds() < minOpsPerFaultWindow {
			return false
		}
	}
	return true
}

// variants lists the one-step-smaller variants of s, biggest cut first;
// no load is shorter than minLoad, and no rate or fault window is cut so
// far that a fault window holds fewer than minOpsPerFaultWindow operations.
// The cuts, in order: remove each fault, a shorter load, faults earlier,
// each fault's window halved, then the loadCuts.
func variants(s Schedule, minLoad time.Duration) []variant {
	var out []variant
	add := func(key, change string, edit func(*Schedule) bool) {
		c := s.clone()
		if edit(&c) {
			out = append(out, variant{key, change, c})
		}
	}
	for i := range s.Faults {
		add("remove "+s.Faults[i].Kind, fmt.Sprintf("remove fault %s", s.Faults[i].Text()), func(c *Schedule) bool {
			c.Faults = slices.Delete(c.Faults, i, i+1)
			return true
		})
	}
	add("shorter load", "shorter load", func(c *Schedule) bool { return shorterLoad(c, minLoad) })
	add("faults earlier", "faults earlier", faultsEarlier)
	for i := range s.Faults {
		add("window "+s.Faults[i].Kind, fmt.Sprintf("halve the window of fault %s", s.Faults[i].Text()), func(c *Schedule) bool {
			f := &c.Faults[i]
			d := max(minFaultWindow, f.For/2).Round(100 * time.Millisecond)
			if d >= f.For {
				return false
			}
			f.For = d
			return faultWindowsHold(c)
		})
	}
	for _, cut := range loadCuts {
		add(cut.name, cut.name, cut.edit)
	}
	return out
}

// shorterLoad halves the load (not below minLoad, nor below the end of the
// last fault window plus 300 ms); false when that is no shorter.
func shorterLoad(c *Schedule, minLoad time.Duration) bool {
	var end time.Duration
	for _, f := range c.Faults {
		end = max(end, f.End())
	}
	d := max(minLoad, end+300*time.Millisecond, c.Load.Duration/2).Round(100 * time.Millisecond)
	if d >= c.Load.Duration {
		return false
	}
	c.Load.Duration = d
	if c.Load.Period > d {
		c.Load.Period = d
	}
	return true
}

// faultsEarlier halves every fault's start (not below 200 ms); false when none moved.
func faultsEarlier(c *Schedule) bool {
	moved := false
	for i := range c.Faults {
		at := max(200*time.Millisecond, c.Faults[i].At/2).Round(100 * time.Millisecond)
		if at < c.Faults[i].At {
			c.Faults[i].At, moved = at, true
		}
	}
	return moved
}

// loadCuts are the cuts of the load and the activity after the fault
// cuts, in order: each edits a copy and returns false when it changes nothing.
var loadCuts = []struct {
	name string
	edit func(*Schedule) bool
}{
	{"halve the rate", func(c *Schedule) bool {
		if c.Load.Rate <= 20 {
			return false
		}
		l := &c.Load
		l.Rate, l.Slope, l.Amplitude, l.Peak = math.Round(l.Rate/2), math.Round(l.Slope/2), math.Round(l.Amplitude/2), math.Round(l.Peak/2)
		return faultWindowsHold(c)
	}},
	{"half the users", func(c *Schedule) bool {
		if c.Users <= 10 {
			return false
		}
		c.Users = max(10, c.Users/2)
		return true
	}},
	{"constant curve", func(c *Schedule) bool {
		if c.Load.Shape == "constant" {
			return false
		}
		rate := c.Demand() / c.Load.Duration.Seconds()
		c.Load = Load{Duration: c.Load.Duration, Shape: "constant", Rate: math.Round(rate), Concurrency: c.Load.Concurrency,
			Timeout: c.Load.Timeout, Retries: c.Load.Retries, Mix: c.Load.Mix}
		return true
	}},
	{"no duplicates or releases in the mix", func(c *Schedule) bool {
		if c.Load.Mix == (Load{}).Mix {
			return false
		}
		c.Load.Mix = (Load{}).Mix
		return true
	}},
	{"half the workers", func(c *Schedule) bool {
		if c.Load.Concurrency <= 4 {
			return false
		}
		c.Load.Concurrency = max(4, c.Load.Concurrency/2)
		return true
	}},
	{"no pipeline", func(c *Schedule) bool {
		if c.Pipeline == nil {
			return false
		}
		c.Pipeline = nil
		return true
	}},
	{"one bucket", func(c *Schedule) bool {
		if c.Buckets <= 1 {
			return false
		}
		c.Buckets = 1
		return true
	}},
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
