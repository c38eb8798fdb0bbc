package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The baseline section reaches the text and the HTML: each figure with
// its change, threshold and p-value, the window and the verdict.
func TestBaselineInTextAndHTML(t *testing.T) {
	r := &Report{Scenario: "sold-out-90", StartedAt: time.Unix(0, 0), Baseline: &Baseline{History: "hist/", Status: BaselineCompared,
		Detail: "against 5 runs; regressed: p99", Match: BaselineMatch{Scenario: "sold-out-90", ScenarioHash: "abc", Cores: 2},
		Window: &BaselineWindow{From: time.Unix(0, 0), To: time.Unix(86400, 0), Runs: 5}, MinRuns: 5, Alpha: 0.01,
		Figures: []BaselineFigure{{Figure: "p99_ms", Unit: "ms", Worse: "higher", Tonight: 90, Baseline: 30, Change: 2, Threshold: 0.2, PValue: 1e-6, Samples: 10, BaselineSamples: 50, Regressed: true}}}}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"baseline (hist/): compared", "REGRESSED p99_ms 90.000 ms against a baseline median of 30.000 (200.0% worse, allowed 20% worse; Mann-Whitney p=1e-06 over 10 vs 50"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="baseline"`, "Baseline: compared", "5 runs from 1970-01-01T00:00:00Z to 1970-01-02T00:00:00Z", "200.0% worse", "20% worse", "1e-06", "regressed"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
