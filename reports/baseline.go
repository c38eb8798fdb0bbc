package reports

import (
	"fmt"
	"time"
)

// Baseline is report.json's baseline (additive; present with run
// --baseline): this run's figures against the same scenario's recent
// runs on comparable machines, from the results history (reports/results).
type Baseline struct {
	// History names the store read (a directory or a database without
	// its password).
	History string `json:"history"`
	// Status is "compared" or "not enough history" (then nothing was
	// judged and the run is not failed by it); Detail says why.
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Match is what a comparable record shares with this run.
	Match BaselineMatch `json:"match"`
	// Window is the comparable runs compared with (absent without any).
	Window *BaselineWindow `json:"window,omitempty"`
	// MinRuns is the fewest comparable runs a comparison needs; Alpha the
	// significance level of the rank test.
	MinRuns int              `json:"min_runs"`
	Alpha   float64          `json:"alpha"`
	Figures []BaselineFigure `json:"figures,omitempty"`
}

// Baseline statuses.
const (
	BaselineCompared     = "compared"
	BaselineInsufficient = "not enough history"
)

// BaselineMatch is what makes a past run comparable.
type BaselineMatch struct {
	Scenario     string `json:"scenario"`
	ScenarioHash string `json:"scenario_hash"`
	Cores        int    `json:"cores"`
}

// BaselineWindow is the past runs compared with: the oldest's and the
// newest's start, how many, and their report directories.
type BaselineWindow struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Runs int       `json:"runs"`
	Dirs []string  `json:"dirs,omitempty"`
}

// BaselineFigure is one figure judged against the baseline.
type BaselineFigure struct {
	Figure string `json:"figure"` // e.g. "p99_ms", "throughput_ops_per_s"
	Unit   string `json:"unit"`
	// Worse is "higher" or "lower": which way is a regression.
	Worse string `json:"worse"`
	// Tonight is this run's figure, Baseline the median of the window's.
	Tonight  float64 `json:"tonight"`
	Baseline float64 `json:"baseline"`
	// Change is the relative worsening (0.35: 35% worse; negative:
	// better); Threshold the most allowed.
	Change    float64 `json:"change"`
	Threshold float64 `json:"threshold"`
	// PValue is the one-sided Mann-Whitney U test's p of this run's
	// per-second samples being worse than the window's pooled ones.
	PValue          float64 `json:"p_value"`
	Samples         int     `json:"samples"`
	BaselineSamples int     `json:"baseline_samples"`
	// RunZ is how many run-to-run deviations (1.4826 × the MAD of the
	// window's runs' figures) tonight lies beyond their median, the worse
	// way (additive).
	RunZ float64 `json:"run_z"`
	// Regressed: p < Alpha, Change > Threshold and RunZ above the
	// history's bound (history.RunZ): significant within the run, material,
	// and beyond the run-to-run noise.
	Regressed bool `json:"regressed"`
}

// Line is the figure in one line, as text, JUnit and HTML state it.
func (f BaselineFigure) Line(alpha float64) string {
	return fmt.Sprintf("%s %.3f %s against a baseline median of %.3f (%s, allowed %.0f%% worse; Mann-Whitney p=%.2g over %d vs %d per-second samples, significant below %g; %.1f run-to-run deviations beyond the runs' median)",
		f.Figure, f.Tonight, f.Unit, f.Baseline, f.ChangeText(), 100*f.Threshold, f.PValue, f.Samples, f.BaselineSamples, alpha, f.RunZ)
}

// ThresholdText is the allowed worsening: "20% worse".
func (f BaselineFigure) ThresholdText() string { return fmt.Sprintf("%.0f%% worse", 100*f.Threshold) }

// ChangeText is the change in words: "35.0% worse", "4.2% better".
func (f BaselineFigure) ChangeText() string {
	if f.Change < 0 {
		return fmt.Sprintf("%.1f%% better", -100*f.Change)
	}
	return fmt.Sprintf("%.1f%% worse", 100*f.Change)
}

// WindowText states the window in words.
func (b *Baseline) WindowText() string {
	if b.Window == nil {
		return "no comparable run"
	}
	return fmt.Sprintf("%d runs from %s to %s", b.Window.Runs, b.Window.From.UTC().Format(time.RFC3339), b.Window.To.UTC().Format(time.RFC3339))
}
