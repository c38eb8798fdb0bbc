package results

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"seckill-harness/reports"
)

// Defaults of the baseline judgement.
const (
	// MinRuns is the fewest comparable past runs a comparison needs.
	MinRuns = 5
	// Window is how many of the newest comparable runs are compared with.
	Window = 14
	// Alpha is the rank test's significance level.
	Alpha = 0.01
	// RunZ is how far beyond the window's median tonight's figure must be,
	// in run-to-run deviations (1.4826 × the median absolute deviation of
	// the window's runs' figures, at least 1% of their median), to count
	// as a regression: the per-second rank test sees one run's seconds
	// move together, and on a shared machine whole runs differ by more
	// than any one run's seconds do (measured: five runs of sold-out-90 on
	// the same scripts had p99 0.95–1.50 ms, the sixth 1.96 ms, p=0.007).
	RunZ = 4.0
)

// figureRule is one regression name's figure: the report figure, the
// per-second samples it is tested on, which way is worse and what an
// assertion on it judges.
type figureRule struct {
	figure, sample string
	higherWorse    bool
	judges         string
}

// Regression figures a scenario's regressions: section may bound, with
// the per-second samples each is tested on and which way is worse. Each
// also exists per phase as "phase.<phase name>.<name>" (phaseRule).
var figureRules = map[string]figureRule{
	"p50":         {"p50_ms", SampleP50, true, "latency"},
	"p99":         {"p99_ms", SampleP99, true, "latency"},
	"p999":        {"p999_ms", SampleP999, true, "latency"},
	"service_p50": {"service.p50_ms", SampleServiceP50, true, "latency"},
	"service_p99": {"service.p99_ms", SampleServiceP99, true, "latency"},
	"throughput":  {"throughput_ops_per_s", SampleThroughput, false, "throughput"},
}

// PhasePrefix starts a per-phase regression name: "phase.baseline.p99"
// bounds the p99 of the phase named baseline (report.json phases[].name).
const PhasePrefix = "phase."

// phaseRule is the rule of a per-phase name ("phase.<phase>.<name>" with a
// name of figureRules that has a per-phase figure: p50, p99, p999,
// throughput): the phase's figure and its seconds' samples.
func phaseRule(name string) (figureRule, bool) {
	rest, ok := strings.CutPrefix(name, PhasePrefix)
	if !ok {
		return figureRule{}, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return figureRule{}, false
	}
	phase, fig := rest[:i], rest[i+1:]
	r, ok := figureRules[fig]
	if !ok || strings.HasPrefix(r.figure, "service.") {
		return figureRule{}, false
	}
	p := PhasePrefix + phase + "."
	return figureRule{p + r.figure, p + r.sample, r.higherWorse, r.judges}, true
}

// ruleOf is the rule of a regression name, whole-run or per-phase.
func ruleOf(name string) (figureRule, bool) {
	if r, ok := figureRules[name]; ok {
		return r, true
	}
	return phaseRule(name)
}

// KnownRegression says whether name is a regression name: one of
// RegressionNames or a per-phase one ("phase.<phase>.p50").
func KnownRegression(name string) bool {
	_, ok := ruleOf(name)
	return ok
}

// RegressionNames are the whole-run names a regressions: section may use
// (each of p50, p99, p999 and throughput also per phase:
// "phase.<phase name>.p99").
func RegressionNames() []string {
	out := make([]string, 0, len(figureRules))
	for k := range figureRules {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Thresholds bound the relative worsening per regression name (0.2:
// 20%); a negative value turns the name off.
type Thresholds map[string]float64

// DefaultThresholds are judged unless a scenario says otherwise: the
// median (latency and service time) and p99 20% worse, throughput 10%
// lower. The median is judged by default because a slower path moves it
// first: a reserve script slowed by a 0.8 ms busy loop doubled smoke's
// median (0.61 -> 1.35 ms) and left its p99 where it was (2.38 -> 2.22 ms).
func DefaultThresholds() Thresholds {
	return Thresholds{"p50": 0.20, "service_p50": 0.20, "p99": 0.20, "throughput": 0.10}
}

// With is t with over's entries over it (nil over: t).
func (t Thresholds) With(over map[string]float64) Thresholds {
	out := Thresholds{}
	for k, v := range t {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// Comparable says whether past was run like tonight: same scenario, same
// content hash, same cores, a run (not a suite or compare record), and
// not an interrupted or errored one.
func Comparable(tonight, past Record) bool {
	return past.Kind == KindRun && past.Scenario == tonight.Scenario && past.ScenarioHash == tonight.ScenarioHash &&
		past.Machine.Cores == tonight.Machine.Cores && past.Exit != 2 && past.At.Before(tonight.At)
}

// Judge compares tonight with the newest Window comparable records of
// past (any order) under th; where names the store for the report.
func Judge(tonight Record, past []Record, th Thresholds, where string) *reports.Baseline {
	b := &reports.Baseline{History: where, MinRuns: MinRuns, Alpha: Alpha,
		Match: reports.BaselineMatch{Scenario: tonight.Scenario, ScenarioHash: tonight.ScenarioHash, Cores: tonight.Machine.Cores}}
	var win []Record
	for _, r := range past {
		if Comparable(tonight, r) {
			win = append(win, r)
		}
	}
	sortByAt(win)
	if len(win) > Window {
		win = win[len(win)-Window:]
	}
	if len(win) > 0 {
		b.Window = &reports.BaselineWindow{From: win[0].At, To: win[len(win)-1].At, Runs: len(win)}
		for _, r := range win {
			b.Window.Dirs = append(b.Window.Dirs, r.Run)
		}
	}
	if len(win) < MinRuns {
		b.Status = reports.BaselineInsufficient
		b.Detail = fmt.Sprintf("%d comparable run(s) in the history (scenario %s, content hash %s, %d cores); at least %d needed: nothing judged",
			len(win), tonight.Scenario, tonight.ScenarioHash, tonight.Machine.Cores, MinRuns)
		return b
	}
	names := make([]string, 0, len(th))
	for n := range th {
		names = append(names, n)
	}
	sort.Strings(names)
	var regressed []string
	for _, n := range names {
		f, ok := judgeFigure(n, th[n], tonight, win)
		if !ok {
			continue
		}
		b.Figures = append(b.Figures, f)
		if f.Regressed {
			regressed = append(regressed, n)
		}
	}
	b.Status = reports.BaselineCompared
	b.Detail = fmt.Sprintf("against %s", b.WindowText())
	if len(regressed) > 0 {
		b.Detail += "; regressed: " + strings.Join(regressed, ", ")
	}
	return b
}

// judgeFigure judges one regression name; false when it is off or
// tonight or the window did not measure it.
func judgeFigure(name string, threshold float64, tonight Record, win []Record) (reports.BaselineFigure, bool) {
	rule, known := ruleOf(name)
	now, measured := tonight.Figures[rule.figure]
	if !known || threshold < 0 || !measured {
		return reports.BaselineFigure{}, false
	}
	var values, pooled []float64
	for _, r := range win {
		if v, ok := r.Figures[rule.figure]; ok {
			values = append(values, v)
		}
		pooled = append(pooled, r.Samples[rule.sample]...)
	}
	mine := tonight.Samples[rule.sample]
	if len(values) == 0 || len(pooled) == 0 || len(mine) == 0 {
		return reports.BaselineFigure{}, false
	}
	f := reports.BaselineFigure{Figure: rule.figure, Unit: FigureUnit(rule.figure), Worse: "higher", Tonight: now,
		Baseline: median(values), Threshold: threshold, Samples: len(mine), BaselineSamples: len(pooled)}
	if rule.higherWorse {
		_, f.PValue = MannWhitneyGreater(mine, pooled)
		f.Change = relative(now, f.Baseline)
	} else {
		f.Worse = "lower"
		_, f.PValue = MannWhitneyGreater(pooled, mine)
		f.Change = -relative(now, f.Baseline)
	}
	f.RunZ = runDeviations(now, values, rule.higherWorse)
	f.Regressed = f.PValue < Alpha && f.Change > threshold && f.RunZ > RunZ
	return f, true
}

// relative is (now - base) / base; 0 when base is 0 (no relative change
// can be stated: the figure is not judged regressed).
func relative(now, base float64) float64 {
	if base == 0 {
		return 0
	}
	return (now - base) / base
}

// Assertions are the baseline's verdicts as report assertions: one per
// judged figure ("<name> not regressed against the baseline", judges
// latency or throughput, failed when it regressed), or one skipped
// assertion saying why nothing was judged.
func Assertions(b *reports.Baseline) []reports.Assertion {
	if b == nil {
		return nil
	}
	if b.Status != reports.BaselineCompared {
		return []reports.Assertion{{Name: "baseline: no regression against the results history", Status: reports.StatusSkip, Detail: b.Detail}}
	}
	var out []reports.Assertion
	for _, f := range b.Figures {
		name := regressionName(f.Figure)
		st := reports.StatusPass
		if f.Regressed {
			st = reports.StatusFail
		}
		th := 100 * f.Threshold
		out = append(out, reports.Assertion{Name: fmt.Sprintf("baseline: %s not regressed beyond %.0f%%", name, th),
			Status: st, Observed: round1(100 * f.Change), Threshold: &th, Unit: "%", Judges: judgesOf(name),
			Detail: f.Line(b.Alpha) + "; baseline window: " + b.WindowText()})
	}
	return out
}

func regressionName(figure string) string {
	for n, r := range figureRules {
		if r.figure == figure {
			return n
		}
	}
	if rest, ok := strings.CutPrefix(figure, PhasePrefix); ok {
		if i := strings.LastIndexByte(rest, '.'); i > 0 {
			for n, r := range figureRules {
				if r.figure == rest[i+1:] {
					return PhasePrefix + rest[:i] + "." + n
				}
			}
		}
	}
	return figure
}

// judgesOf is what an assertion on regression name judges.
func judgesOf(name string) string {
	r, _ := ruleOf(name)
	return r.judges
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// runDeviations is how many run-to-run deviations tonight's figure lies
// beyond the window's median, in the worse direction (negative: better):
// the deviation is 1.4826 × the median absolute deviation of the runs'
// figures (a normal's σ, robust to one wild run), at least 1% of their
// median, so identical past runs do not make any change infinite.
func runDeviations(now float64, values []float64, higherWorse bool) float64 {
	m := median(values)
	dev := make([]float64, len(values))
	for i, v := range values {
		dev[i] = math.Abs(v - m)
	}
	sigma := max(1.4826*median(dev), 0.01*math.Abs(m))
	if sigma == 0 {
		sigma = 1e-9
	}
	if higherWorse {
		return (now - m) / sigma
	}
	return (m - now) / sigma
}
