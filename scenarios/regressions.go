package scenarios

import (
	"sort"
	"strconv"
	"strings"

	"seckill-harness/reports/results"
)

// regressions decodes regressions: (figure → "20%" or "off"); a value
// that does not parse is left out of Regressions and refused by Validate.
func (d *dec) regressions(root *node) {
	m := d.section(root, "regressions", "regressions")
	if m == nil || m.kind != mapNode {
		return
	}
	d.s.parsed.regressionText = map[string]string{}
	d.s.Regressions = map[string]float64{}
	for _, k := range m.keys {
		text := d.str(m, k, "regressions."+k, "")
		d.s.parsed.regressionText[k] = text
		if v, ok := parseRegression(text); ok {
			d.s.Regressions[k] = v
		}
	}
}

// parseRegression reads "20%" as 0.2 and "off" as -1.
func parseRegression(text string) (float64, bool) {
	if strings.EqualFold(text, "off") {
		return -1, true
	}
	num, ok := strings.CutSuffix(text, "%")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v < 0 || v > 1000 || v != v {
		return 0, false
	}
	return v / 100, true
}

// regressions checks regressions:: known figures, each a percentage or off.
func (v *validator) regressions() {
	names := results.RegressionNames()
	keys := make([]string, 0, len(v.s.parsed.regressionText))
	for k := range v.s.parsed.regressionText {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := "regressions." + k
		if !results.KnownRegression(k) {
			v.bad(path, "%q: unknown figure; valid: %s, or one of p50, p99, p999, throughput of a phase as phase.<phase name>.p99", k, strings.Join(names, ", "))
			continue
		}
		if _, ok := parseRegression(v.s.parsed.regressionText[k]); !ok {
			v.bad(path, "%q: want a percentage from 0%% to 1000%% like 20%% (how much worse than the baseline the figure may be), or off", v.s.parsed.regressionText[k])
		}
	}
}
