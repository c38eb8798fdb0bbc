package results

import (
	"context"
	"math"
	"sort"

	"seckill-harness/reports/trend"
)

// sampleOf maps a figure to the per-second samples recorded for it.
var sampleOf = map[string]string{"p50_ms": SampleP50, "p99_ms": SampleP99, "p999_ms": SampleP999, "throughput_ops_per_s": SampleThroughput}

// ToSeries turns records into trend's series: one per scenario and
// figure, its points oldest first, one per record that measured the
// figure (a finite value), with the record's verdict, report directory
// and, for figures with per-second samples, those samples. Series are
// sorted by scenario, then figure.
func ToSeries(records []Record) []trend.Series {
	rs := append([]Record(nil), records...)
	sortByAt(rs)
	type key struct{ scenario, figure string }
	idx := map[key]int{}
	var out []trend.Series
	for _, r := range rs {
		for fig, v := range r.Figures {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			k := key{r.Scenario, fig}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, trend.Series{Scenario: r.Scenario, Figure: fig, Unit: FigureUnit(fig)})
			}
			p := trend.Point{At: r.At, Value: v, Verdict: r.Verdict, Run: r.Run}
			if s, ok := sampleOf[fig]; ok {
				p.Samples = r.Samples[s]
			}
			out[i].Points = append(out[i].Points, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Scenario != out[j].Scenario {
			return out[i].Scenario < out[j].Scenario
		}
		return out[i].Figure < out[j].Figure
	})
	return out
}

// Source is trend's Source over a store: every scenario's records as
// series (ToSeries).
func Source(ctx context.Context, st Store) trend.Source {
	return func() ([]trend.Series, error) {
		rs, err := st.Records(ctx, "")
		if err != nil {
			return nil, err
		}
		return ToSeries(rs), nil
	}
}
