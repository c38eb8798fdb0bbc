package reports

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"seckill-harness/internal/boundedread"
)

// File names of a saved run directory.
const (
	ReportFile   = "report.json"
	HGRMFileName = "latency.hgrm"
	HlogFileName = "latency.hlog"
	HTMLFileName = "report.html"
	SummaryFile  = "summary.md"
)

// Run is a saved run directory, as LoadRun reads it.
type Run struct {
	Dir    string
	Report *Report
	// Hists are the run's histograms: from latency.hlog (complete), else
	// rebuilt from latency.hgrm (the overall latency only), else nil.
	Hists *Histograms
	// HistSource names the file Hists came from ("" when nil).
	HistSource string
}

// LoadRun reads dir/report.json and the run's histograms: latency.hlog
// when present, else latency.hgrm (see ReadHGRM), else none. Phases read
// from the hlog take their names and windows from report.json.
func LoadRun(dir string) (*Run, error) {
	rep, err := ReadJSON(filepath.Join(dir, ReportFile))
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Report: rep}
	if f, err := openHist(filepath.Join(dir, HlogFileName)); err == nil {
		h, rerr := ReadHlog(f)
		f.Close()
		if rerr != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, HlogFileName), rerr)
		}
		for i := range h.Phases {
			if i < len(rep.Phases) {
				p := rep.Phases[i]
				h.Phases[i].Name, h.Phases[i].StartS, h.Phases[i].EndS = p.Name, p.StartS, p.EndS
			}
		}
		run.Hists, run.HistSource = h, HlogFileName
		return run, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if f, err := openHist(filepath.Join(dir, HGRMFileName)); err == nil {
		lat, rerr := ReadHGRM(f)
		f.Close()
		if rerr != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, HGRMFileName), rerr)
		}
		run.Hists, run.HistSource = &Histograms{Latency: lat}, HGRMFileName
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return run, nil
}

// MaxHistogramBytes is the largest latency.hlog or latency.hgrm LoadRun reads.
const MaxHistogramBytes = 1 * boundedread.GiB

// openHist opens a run's histogram file with its limit (fs.ErrNotExist
// when it is missing).
func openHist(path string) (io.ReadCloser, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return boundedread.Open(path, MaxHistogramBytes, "histogram file", "give the run directory seckill-harness wrote")
}

// MergeRuns merges runs of one load split across several load generators
// into one report and its histograms. Every run needs its latency.hlog
// (Run.HistSource == HlogFileName): percentiles are never averaged.
//
//   - Counts are summed: totals (ops, wire attempts, late starts, dropped,
//     outcomes, errors, clamps), unknowns, lost acks; per phase (matched by
//     position, and only when every run has the same phase names) ops,
//     outcomes, dropped and throughput; per second (matched by t_s, from
//     each run's own start) ops, outcomes, errors, dropped, completed.
//   - Percentiles (overall, per phase, per second, latency and service
//     time) come from the histograms added stream by stream, so they are
//     exactly those of one histogram holding every run's values.
//   - started_at is the earliest start, duration_s the longest run, and
//     throughput the summed ops over that duration. Load.TargetRate and
//     Concurrency are summed; the rest of the load, versions and topology
//     are the first run's.
//   - Stock: when every run reports the same final stock they shared one
//     cluster and it is kept as is; otherwise the runs had their own and
//     the buckets are summed.
//   - Invariants are merged by id: fail if any run failed it, else pass if
//     any passed, else skip; evidence per run. An expected failure keeps
//     its minimum, sums what the runs counted, and is met when the merged
//     invariant failed with at least the minimum. They were checked against
//     each generator's own history: a merged pass does not prove what only
//     the union of the histories could (I3, I4, I5 across generators).
//   - Faults and assertions are concatenated (assertion names prefixed
//     with the run's label); passed is true only when every run passed.
//
// The returned notes say what could not be merged (phases that differ).
func MergeRuns(runs []*Run) (*Report, *Histograms, []string, error) {
	if len(runs) == 0 {
		return nil, nil, nil, errors.New("reports: merge: no runs")
	}
	for _, r := range runs {
		if r.HistSource != HlogFileName || r.Hists == nil {
			return nil, nil, nil, fmt.Errorf("reports: merge: %s has no %s (runs written before it existed cannot be merged exactly)",
				r.Dir, HlogFileName)
		}
	}
	labels := runLabels(runs)
	first := runs[0].Report
	out := &Report{
		Scenario: first.Scenario, Seed: first.Seed, Passed: true,
		StartedAt: first.StartedAt, Versions: first.Versions, Topology: first.Topology, Load: first.Load,
		Totals: Totals{LateStartThresholdMs: first.Totals.LateStartThresholdMs,
			Outcomes: map[string]int64{}, Errors: map[string]int64{}},
	}
	out.Load.TargetRate, out.Load.Concurrency = 0, 0
	hs := &Histograms{Latency: NewHistogram(), Service: NewHistogram()}
	var notes []string
	scenarios := []string{}

	for i, run := range runs {
		r := run.Report
		if !slices.Contains(scenarios, r.Scenario) {
			scenarios = append(scenarios, r.Scenario)
		}
		addRunCounts(out, r)
		addRunHistograms(hs, run.Hists)
		addRunListings(out, run, labels[i], len(runs) > 1)
	}
	out.Scenario = strings.Join(scenarios, "+")
	if out.DurationS > 0 {
		out.ThroughputOpsPerS = float64(out.Totals.Ops) / out.DurationS
	}
	out.LatencyMs = PercentilesOf(hs.Latency)
	out.ServiceTimeMs = PercentilesOf(hs.Service)
	sort.SliceStable(out.Faults, func(i, j int) bool { return out.Faults[i].InjectedAtS < out.Faults[j].InjectedAtS })

	out.Timeseries = mergeTimeseries(runs, hs)
	if phases, phs, ok := mergePhases(runs); ok {
		out.Phases, hs.Phases = phases, phs
	} else {
		notes = append(notes, "the runs have different phases: the merged report has none")
	}
	out.Stock = mergeStock(runs)
	if out.Stock.Initial > 0 {
		out.Load.Stock = out.Stock.Initial
	}
	out.Invariants = mergeInvariants(runs, labels)
	return out, hs, notes, nil
}

// addRunCounts folds one run's report into out: passed (every run and
// none with a failed check), the earliest start, the longest duration,
// the summed target rate and concurrency, the summed totals (the coarsest
// pacer clock), unknowns and lost acks.
func addRunCounts(out, r *Report) {
	out.Passed = out.Passed && r.Passed && len(r.FailedChecks()) == 0
	if !r.StartedAt.IsZero() && (out.StartedAt.IsZero() || r.StartedAt.Before(out.StartedAt)) {
		out.StartedAt = r.StartedAt
	}
	out.DurationS = max(out.DurationS, r.DurationS)
	out.Load.TargetRate += r.Load.TargetRate
	out.Load.Concurrency += r.Load.Concurrency

	t := &out.Totals
	t.Ops += r.Totals.Ops
	t.WireAttempts += r.Totals.WireAttempts
	t.LateStarts += r.Totals.LateStarts
	if t.PacerClock == "" || r.Totals.PacerClock == "go-timer" {
		t.PacerClock = r.Totals.PacerClock // the coarsest of the generators' clocks
	}
	t.Dropped += r.Totals.Dropped
	addCounts(t.Outcomes, r.Totals.Outcomes)
	addCounts(t.Errors, r.Totals.Errors)
	t.Clamped.LatencyLow += r.Totals.Clamped.LatencyLow
	t.Clamped.LatencyHigh += r.Totals.Clamped.LatencyHigh
	t.Clamped.ServiceLow += r.Totals.Clamped.ServiceLow
	t.Clamped.ServiceHigh += r.Totals.Clamped.ServiceHigh

	out.Unknown.Total += r.Unknown.Total
	out.Unknown.Executed += r.Unknown.Executed
	out.Unknown.NotExecuted += r.Unknown.NotExecuted
	out.Unknown.Unresolved += r.Unknown.Unresolved
	out.LostAcks += r.LostAcks
}

// addRunHistograms adds one run's overall and per-second latency and
// service-time histograms into hs, second by second from the run's start.
func addRunHistograms(hs, h *Histograms) {
	mergeDense(&hs.Latency, h.Latency)
	mergeDense(&hs.Service, h.Service)
	for t, s := range h.Seconds {
		for len(hs.Seconds) <= t {
			hs.Seconds = append(hs.Seconds, SecondHistograms{})
		}
		mergePacked(&hs.Seconds[t].Latency, s.Latency)
		mergePacked(&hs.Seconds[t].Service, s.Service)
	}
}

// addRunListings appends one run's faults, assertions and its Source row
// to out. When several runs are merged (multi), each fault's evidence gets
// a "source" entry with the run's label (on a copy of the evidence map)
// and each assertion name is prefixed with "[label] ".
func addRunListings(out *Report, run *Run, label string, multi bool) {
	r := run.Report
	for _, f := range r.Faults {
		if multi {
			f.Evidence = maps.Clone(f.Evidence)
			if f.Evidence == nil {
				f.Evidence = map[string]any{}
			}
			f.Evidence["source"] = label
		}
		out.Faults = append(out.Faults, f)
	}
	for _, a := range r.Assertions {
		if multi {
			a.Name = "[" + label + "] " + a.Name
		}
		out.Assertions = append(out.Assertions, a)
	}
	out.Sources = append(out.Sources, Source{Label: label, Dir: run.Dir, Scenario: r.Scenario, Seed: r.Seed,
		Passed: r.Passed, StartedAt: r.StartedAt, DurationS: r.DurationS, Ops: r.Totals.Ops,
		ThroughputOpsPerS: r.ThroughputOpsPerS, LatencyMs: r.LatencyMs})
}

func addCounts(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}

// runLabels names each run by its directory's base name, or its whole
// path when base names repeat.
func runLabels(runs []*Run) []string {
	seen := map[string]int{}
	for _, r := range runs {
		seen[filepath.Base(filepath.Clean(r.Dir))]++
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		b := filepath.Base(filepath.Clean(r.Dir))
		if seen[b] > 1 {
			b = filepath.Clean(r.Dir)
		}
		out[i] = b
	}
	return out
}

func mergeTimeseries(runs []*Run, hs *Histograms) []Second {
	n := len(hs.Seconds)
	for _, r := range runs {
		for _, s := range r.Report.Timeseries {
			n = max(n, int(s.TS)+1)
		}
	}
	out := make([]Second, n)
	for i := range out {
		out[i].TS = int64(i)
	}
	for _, r := range runs {
		for _, s := range r.Report.Timeseries {
			if s.TS < 0 {
				continue
			}
			o := &out[s.TS]
			o.Ops += s.Ops
			o.Errors += s.Errors
			o.Dropped += s.Dropped
			o.Completed += s.Completed
			if len(s.Outcomes) > 0 {
				if o.Outcomes == nil {
					o.Outcomes = map[string]int64{}
				}
				addCounts(o.Outcomes, s.Outcomes)
			}
		}
	}
	for i := range out {
		if i >= len(hs.Seconds) {
			break
		}
		s := hs.Seconds[i]
		if s.Latency != nil {
			lat := percentilesOf(s.Latency)
			out[i].P50Ms, out[i].P95Ms, out[i].P99Ms, out[i].P999Ms, out[i].MaxMs = lat.P50, lat.P95, lat.P99, lat.P999, lat.Max
		}
		if s.Service != nil {
			svc := percentilesOf(s.Service)
			out[i].ServiceP50Ms, out[i].ServiceP99Ms, out[i].ServiceMaxMs = svc.P50, svc.P99, svc.Max
		}
	}
	return out
}

// mergePhases merges phases position by position when every run has the
// same phase names (windows: earliest start, latest end).
func mergePhases(runs []*Run) ([]Phase, []PhaseHistograms, bool) {
	names := func(r *Run) []string {
		var s []string
		for _, p := range r.Report.Phases {
			s = append(s, p.Name)
		}
		return s
	}
	want := names(runs[0])
	for _, r := range runs {
		if !slices.Equal(names(r), want) || len(r.Hists.Phases) != len(want) {
			return nil, nil, false
		}
	}
	phases := make([]Phase, len(want))
	hists := make([]PhaseHistograms, len(want))
	for i := range want {
		p := &phases[i]
		h := &hists[i]
		p.Outcomes = map[string]int64{}
		for k, r := range runs {
			rp := r.Report.Phases[i]
			if k == 0 || rp.StartS < p.StartS {
				p.StartS = rp.StartS
			}
			p.EndS = max(p.EndS, rp.EndS)
			p.Name = rp.Name
			p.Ops += rp.Ops
			p.Dropped += rp.Dropped
			p.ThroughputOpsPerS += rp.ThroughputOpsPerS
			addCounts(p.Outcomes, rp.Outcomes)
			mergeDense(&h.Latency, r.Hists.Phases[i].Latency)
			mergeDense(&h.Service, r.Hists.Phases[i].Service)
		}
		h.Name, h.StartS, h.EndS = p.Name, p.StartS, p.EndS
		p.LatencyMs = PercentilesOf(h.Latency)
		p.ServiceTimeMs = PercentilesOf(h.Service)
	}
	return phases, hists, true
}

func mergeStock(runs []*Run) Stock {
	shared := true
	for _, r := range runs[1:] {
		if !reflect.DeepEqual(normStock(r.Report.Stock), normStock(runs[0].Report.Stock)) {
			shared = false
		}
	}
	if shared {
		return runs[0].Report.Stock
	}
	var out Stock
	byBucket := map[int]*BucketStock{}
	for _, r := range runs {
		s := r.Report.Stock
		out.Initial += s.Initial
		out.Available += s.Available
		out.Reserved += s.Reserved
		out.ReleasedTotal += s.ReleasedTotal
		for _, b := range s.Buckets {
			m := byBucket[b.Bucket]
			if m == nil {
				m = &BucketStock{Bucket: b.Bucket}
				byBucket[b.Bucket] = m
			}
			m.Initial += b.Initial
			m.Available += b.Available
			m.Reserved += b.Reserved
			m.ReleasedTotal += b.ReleasedTotal
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byBucket)) {
		out.Buckets = append(out.Buckets, *byBucket[k])
	}
	return out
}

func normStock(s Stock) Stock {
	if len(s.Buckets) == 0 {
		s.Buckets = nil
	}
	return s
}

func mergeInvariants(runs []*Run, labels []string) []Invariant {
	var order []string
	byID := map[string]*Invariant{}
	details := map[string][]string{}
	for i, r := range runs {
		for _, inv := range r.Report.Invariants {
			key := inv.ID
			if key == "" {
				key = inv.Name
			}
			m := byID[key]
			if m == nil {
				m = &Invariant{ID: inv.ID, Name: inv.Name, Status: StatusSkip, Evidence: map[string]any{}}
				byID[key] = m
				order = append(order, key)
			}
			m.Waived = m.Waived || inv.Waived
			if e := inv.Expected; e != nil {
				// The same scenario on every generator: the same minimum;
				// what each counted adds up (Met is settled below).
				if m.Expected == nil {
					m.Expected = &ExpectedFailure{Min: e.Min, CountOf: e.CountOf}
				}
				m.Expected.Count += e.Count
			}
			switch {
			case inv.Status == StatusFail:
				m.Status = StatusFail
			case inv.Status == StatusPass && m.Status != StatusFail:
				m.Status = StatusPass
			}
			if len(runs) == 1 {
				m.Detail, m.Evidence = inv.Detail, inv.Evidence
				continue
			}
			m.Evidence[labels[i]] = map[string]any{"status": inv.Status, "detail": inv.Detail, "evidence": inv.Evidence}
			details[key] = append(details[key], labels[i]+": "+inv.Detail)
		}
	}
	out := make([]Invariant, 0, len(order))
	for _, k := range order {
		m := byID[k]
		if len(runs) > 1 {
			m.Detail = strings.Join(details[k], "; ")
		}
		if e := m.Expected; e != nil {
			e.Met = m.Status == StatusFail && e.Count >= e.Min
		}
		out = append(out, *m)
	}
	return out
}
