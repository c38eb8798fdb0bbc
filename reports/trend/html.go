package trend

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"time"

	"seckill-harness/reports"
)

// The trend page is one self-contained file like report.html: the page,
// report.html's style sheet, the same embedded ECharts library
// (reports.ChartLibraryJS), the shared page frame (reports.PageKitJS) and
// assets/trend.js, all inlined under a
// Content-Security-Policy that forbids every external load. Without
// JavaScript every figure stays in its tables.

//go:embed assets/trend.js
var trendJS string

//go:embed assets/trend.html.tmpl
var trendTemplateText string

var trendTemplate = template.Must(template.New("trend").Parse(trendTemplateText))

// pageRow is one result as the page's tables show it.
type pageRow struct {
	Index                                                         int
	Scenario, Figure, Unit, Nights, Last, Spread, Spark, Verdicts string
	Changes                                                       string
	ChangeList                                                    []pageChange
	Table                                                         []pageNight
}

type pageChange struct{ Direction, Text string }

type pageNight struct{ N, At, Value, Verdict, Run string }

// chartJSON is what assets/trend.js draws for one result.
type chartJSON struct {
	Title   string       `json:"title"`
	Unit    string       `json:"unit"`
	Points  []pointJSON  `json:"points"`
	Changes []changeJSON `json:"changes"`
	Levels  [][2]float64 `json:"levels"` // per night [t ms, its segment's mean]
}

type pointJSON struct {
	T       int64   `json:"t"` // Unix ms
	V       float64 `json:"v"`
	Verdict string  `json:"verdict"`
	Run     string  `json:"run,omitempty"`
	// Samples summarises the night's per-second samples: [n, min, median,
	// max] (absent without samples), shown in the tooltip.
	Samples []float64 `json:"samples,omitempty"`
}

type changeJSON struct {
	T     int64  `json:"t"`
	Label string `json:"label"`
	Up    bool   `json:"up"`
}

// WriteHTML writes the trend page of results: a summary table, and per
// result a chart (each night a point coloured by its verdict, the level of
// each segment, each change point a marked vertical line with its change
// and p-value) and a table of every night.
func WriteHTML(w io.Writer, results []Result, o Options) error {
	var rows []pageRow
	var charts []chartJSON
	changes := 0
	for i, r := range results {
		rows = append(rows, pageRowOf(i, r))
		charts = append(charts, chartOf(r))
		changes += len(r.Changes)
	}
	return trendTemplate.Execute(w, struct {
		Results   []Result
		Rows      []pageRow
		Changes   int
		Generated string
		Method    string
		Data      []chartJSON
		ECharts   template.JS
		Script    template.JS
		CSS       template.CSS
	}{results, rows, changes, time.Now().UTC().Format("2006-01-02 15:04 UTC"), methodNote(o), charts,
		template.JS(reports.ChartLibraryJS()), template.JS(reports.PageKitJS() + trendJS), template.CSS(reports.StyleCSS())})
}

func pageRowOf(i int, r Result) pageRow {
	x := rowOf(r)
	pr := pageRow{Index: i, Scenario: x.scenario, Figure: x.figure, Unit: r.Series.Unit, Nights: x.nights,
		Last: x.last, Spread: x.spread, Spark: x.spark, Verdicts: x.verdicts, Changes: x.changes}
	one := r
	for _, c := range r.Changes {
		one.Changes = []ChangePoint{c}
		pr.ChangeList = append(pr.ChangeList, pageChange{Direction: c.Direction, Text: changesText(one)})
	}
	for j, p := range r.Series.Points {
		v := p.Verdict
		if v == "" {
			v = "unknown"
		}
		pr.Table = append(pr.Table, pageNight{N: fmt.Sprint(j + 1), At: p.At.UTC().Format("2006-01-02 15:04"),
			Value: fmtValue(p.Value, r.Series.Unit), Verdict: v, Run: p.Run})
	}
	return pr
}

func chartOf(r Result) chartJSON {
	s := r.Series
	c := chartJSON{Title: s.Scenario + " · " + s.Figure, Unit: s.Unit, Points: []pointJSON{}, Changes: []changeJSON{}}
	for _, p := range s.Points {
		c.Points = append(c.Points, pointJSON{T: p.At.UnixMilli(), V: p.Value, Verdict: p.Verdict, Run: p.Run, Samples: samplesSummary(p.Samples)})
	}
	start := 0
	for k := 0; k <= len(r.Changes); k++ {
		end := len(s.Points)
		if k < len(r.Changes) {
			ch := r.Changes[k]
			end = ch.Index
			c.Changes = append(c.Changes, changeJSON{T: ch.At.UnixMilli(), Up: ch.Direction == "up",
				Label: fmt.Sprintf("%+.1f%% p=%.3g", 100*ch.Relative, ch.PValue)})
		}
		var sum float64
		for _, p := range s.Points[start:end] {
			sum += p.Value
		}
		for _, p := range s.Points[start:end] {
			c.Levels = append(c.Levels, [2]float64{float64(p.At.UnixMilli()), sum / float64(end-start)})
		}
		start = end
	}
	return c
}

// samplesSummary is [n, min, median, max] of samples, nil for none.
func samplesSummary(samples []float64) []float64 {
	if len(samples) == 0 {
		return nil
	}
	v := slices.Clone(samples)
	slices.Sort(v)
	return []float64{float64(len(v)), v[0], median(v), v[len(v)-1]}
}
