package trend

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"seckill-harness/internal/boundedread"
)

// Filter selects what trend judges and shows. Empty fields select all.
type Filter struct {
	Scenario string // exact scenario name
	Figure   string // exact figure name
	Last     int    // the last Last nights of each series (0: all)
}

// Result is one series as trend judges it: the selected nights, their
// change points and summary figures.
type Result struct {
	Series  Series        `json:"series"` // the selected nights only
	Changes []ChangePoint `json:"change_points"`
	Last    float64       `json:"last"`
	Min     float64       `json:"min"`
	Median  float64       `json:"median"`
	Max     float64       `json:"max"`
	// Verdicts counts the nights per verdict ("" counted as "unknown").
	Verdicts map[string]int `json:"verdicts"`
	// Needed is the fewest nights a change point can be found in
	// (2·MinSize); a shorter series was not searched (the tables say so).
	Needed int `json:"nights_needed"`
}

// Analyze validates all, selects with f and detects the change points of
// every selected series with o, sorted by scenario then figure. Series
// with no night left after the selection are dropped. The error (bad
// series, a filter that selects nothing) names the problem and the fix.
func Analyze(all []Series, f Filter, o Options) ([]Result, error) {
	if err := Validate(all); err != nil {
		return nil, err
	}
	if f.Last < 0 {
		return nil, fmt.Errorf("--last %d: the number of nights must be 0 (all) or more", f.Last)
	}
	sel, err := selectSeries(all, f)
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(sel))
	for _, s := range sel {
		if f.Last > 0 && len(s.Points) > f.Last {
			s.Points = s.Points[len(s.Points)-f.Last:]
		}
		if len(s.Points) == 0 {
			continue
		}
		r := summarise(s, Detect(s, o))
		r.Needed = 2 * max(o.MinSize, 2)
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Series, out[j].Series
		return a.Scenario < b.Scenario || a.Scenario == b.Scenario && a.Figure < b.Figure
	})
	return out, nil
}

// selectSeries applies the scenario and figure filters; a filter that
// matches nothing is an error listing what there is.
func selectSeries(all []Series, f Filter) ([]Series, error) {
	var scenarios, figures []string
	var sel []Series
	for _, s := range all {
		scenarios = appendNew(scenarios, s.Scenario)
		if f.Scenario != "" && s.Scenario != f.Scenario {
			continue
		}
		figures = appendNew(figures, s.Figure)
		if f.Figure != "" && s.Figure != f.Figure {
			continue
		}
		sel = append(sel, s)
	}
	switch {
	case len(all) == 0:
		return nil, errors.New("the history holds no series: run the nightly job with a history first, or pass --series a JSON file of series")
	case f.Scenario != "" && len(figures) == 0:
		return nil, fmt.Errorf("--scenario %q: no series of that scenario: use one of %s", f.Scenario, strings.Join(sorted(scenarios), ", "))
	case len(sel) == 0:
		return nil, fmt.Errorf("--figure %q: unknown figure: use one of %s", f.Figure, strings.Join(sorted(figures), ", "))
	}
	return sel, nil
}

func appendNew(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func sorted(xs []string) []string { slices.Sort(xs); return xs }

// Validate checks the Series contract: named, finite values, nights in
// ascending time order, one series per scenario and figure.
func Validate(all []Series) error {
	seen := map[[2]string]bool{}
	for i, s := range all {
		if s.Scenario == "" || s.Figure == "" {
			return fmt.Errorf("series %d has no scenario or figure name: give each series \"scenario\" and \"figure\"", i)
		}
		key := [2]string{s.Scenario, s.Figure}
		if seen[key] {
			return fmt.Errorf("series %s/%s appears twice: merge its points into one series", s.Scenario, s.Figure)
		}
		seen[key] = true
		for j, p := range s.Points {
			if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
				return fmt.Errorf("series %s/%s night %d: value is not finite: leave a night that did not measure the figure out", s.Scenario, s.Figure, j)
			}
			if j > 0 && p.At.Before(s.Points[j-1].At) {
				return fmt.Errorf("series %s/%s night %d (%s) is older than the night before it: sort the points by \"at\"", s.Scenario, s.Figure, j, p.At.Format("2006-01-02T15:04Z07:00"))
			}
		}
	}
	return nil
}

func summarise(s Series, cps []ChangePoint) Result {
	r := Result{Series: s, Changes: cps, Verdicts: map[string]int{}}
	v := make([]float64, len(s.Points))
	for i, p := range s.Points {
		v[i] = p.Value
		verdict := p.Verdict
		if verdict == "" {
			verdict = "unknown"
		}
		r.Verdicts[verdict]++
	}
	r.Last = v[len(v)-1]
	slices.Sort(v)
	r.Min, r.Median, r.Max = v[0], median(v), v[len(v)-1]
	return r
}

// median of sorted, non-empty v.
func median(v []float64) float64 {
	if n := len(v); n%2 == 1 {
		return v[n/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// seriesFileLimit bounds --series files (a year of nights of a few hundred
// series with per-second samples stays far below it).
const seriesFileLimit = 256 << 20

// FileSource reads a JSON array of Series (the shape of Series' json
// tags) from path. A missing, oversized or malformed file is an error that
// names the problem and the expected shape.
func FileSource(path string) Source {
	return func() ([]Series, error) {
		const fix = `give a JSON array of series: [{"scenario":"sold-out-90","figure":"reserve.p99","unit":"ms","points":[{"at":"2026-11-30T02:00:00Z","value":1.9,"verdict":"pass","run":"..."}]}]`
		data, err := boundedread.File(path, seriesFileLimit, "--series file", fix)
		if err != nil { // a missing file: "no such file or directory: " and the fix
			return nil, err
		}
		var all []Series
		if err := json.Unmarshal(data, &all); err != nil {
			return nil, fmt.Errorf("--series file %s is not a JSON array of series (%s): %s", path, jsonWhere(data, err), fix)
		}
		return all, nil
	}
}

// jsonWhere is err with the line of the offending byte when it has one.
func jsonWhere(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err.Error()
	}
	line := 1 + strings.Count(string(data[:off]), "\n")
	return fmt.Sprintf("line %d: %v", line, err)
}
