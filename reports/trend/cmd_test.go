package trend

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// plantedHistory is the history: 30 nights of reserve.p99 with a
// +25% step at night index 18 (the 19th night) under 8% lognormal noise,
// and 30 nights of throughput with noise only.
func plantedHistory(seed uint64) []Series {
	step := nights(seed, 0.08, levels(30, []int{18}, []float64{1.25}))
	noise := nights(seed+1000, 0.08, levels(30, nil, nil))
	noise.Figure, noise.Unit = "throughput", "ops/s"
	for i := range noise.Points {
		noise.Points[i].Value *= 90
	}
	noise.Points[25].Verdict = "fail"
	return []Series{step, noise}
}

func writeSeries(t *testing.T, all []Series) string {
	t.Helper()
	data, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "series.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTrendFindsThePlantedStepAndNothingInNoise: the command, on a JSON
// file of the planted history, names the step's night (±1), its direction,
// size and p-value in the Markdown table, and no change in the noise-only
// series; the text table says the same.
func TestTrendFindsThePlantedStepAndNothingInNoise(t *testing.T) {
	path := writeSeries(t, plantedHistory(1))
	for _, format := range []string{"markdown", "text"} {
		var out bytes.Buffer
		c := Command{Source: FileSource(path), Format: format, Filter: Filter{Last: 30}, Options: DefaultOptions}
		if err := c.Run(&out); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", format, out.String())
		var stepLine, noiseLine string
		for _, l := range strings.Split(out.String(), "\n") {
			switch {
			case strings.Contains(l, "reserve.p99"):
				stepLine = l
			case strings.Contains(l, "throughput"):
				noiseLine = l
			}
		}
		m := regexp.MustCompile(`night (\d+)/30 \S+ ↑ \+(\d+\.\d)% \([^)]*p=([0-9.]+)\)`).FindStringSubmatch(stepLine)
		if m == nil || strings.Count(stepLine, "night ") != 1 {
			t.Fatalf("%s: want one upward change point on the step series: %q", format, stepLine)
		}
		night, _ := strconv.Atoi(m[1])
		rel, _ := strconv.ParseFloat(m[2], 64)
		p, _ := strconv.ParseFloat(m[3], 64)
		if night < 18 || night > 20 || rel < 15 || rel > 35 || p > DefaultOptions.Alpha {
			t.Errorf("%s: change at night %d (+%.1f%%, p=%g), want night 19±1 (index 18), about +25%%, p ≤ %g", format, night, rel, p, DefaultOptions.Alpha)
		}
		if !strings.Contains(noiseLine, "none") || strings.Contains(noiseLine, "night ") {
			t.Errorf("%s: noise-only series has a change point: %q", format, noiseLine)
		}
		if !strings.Contains(noiseLine, "29 pass, 1 fail (last: pass)") {
			t.Errorf("%s: verdicts not counted: %q", format, noiseLine)
		}
	}
}

// TestFiltersSelectAndLastWindows: --scenario/--figure select, --last keeps
// the last nights (the change point's index is within the window).
func TestFiltersSelectAndLastWindows(t *testing.T) {
	all := plantedHistory(1)
	res, err := Analyze(all, Filter{Figure: "reserve.p99", Last: 20}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Series.Points) != 20 || !res[0].Series.Points[19].At.Equal(all[0].Points[29].At) {
		t.Fatalf("want the last 20 nights of reserve.p99, got %d results", len(res))
	}
	if len(res[0].Changes) != 1 || res[0].Changes[0].Index < 7 || res[0].Changes[0].Index > 9 {
		t.Errorf("in the last 20 nights the step is at index 8±1: %+v", res[0].Changes)
	}
	if res[0].Last != all[0].Points[29].Value || res[0].Min > res[0].Median || res[0].Median > res[0].Max {
		t.Errorf("summary figures: %+v", res[0])
	}
	// Seven nights cannot hold two segments of four: the table says so
	// rather than "none".
	short, err := Analyze(all, Filter{Figure: "reserve.p99", Last: 7}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got := changesText(short[0]); got != "too few nights to judge (7 of the 8 needed)" {
		t.Errorf("7 nights: %q", got)
	}
	// A figure that never moves has no change point.
	flat := nights(1, 0, levels(30, nil, nil))
	if cps := Detect(flat, DefaultOptions); len(cps) != 0 {
		t.Errorf("a constant series has change points: %+v", cps)
	}
}

// TestBadInputNamesTheProblemAndTheFix: every refusal says what is wrong
// and what to do.
func TestBadInputNamesTheProblemAndTheFix(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := writeSeries(t, plantedHistory(1))
	unsorted := plantedHistory(1)
	unsorted[0].Points[3], unsorted[0].Points[4] = unsorted[0].Points[4], unsorted[0].Points[3]
	cases := []struct {
		name string
		c    Command
		want []string
	}{
		{"no source", Command{Format: "text"}, []string{"pass --results-history DIR", "or --series FILE"}},
		{"missing file", Command{Source: FileSource(filepath.Join(dir, "nope.json")), Format: "text"}, []string{"--series file", "nope.json", "no such file", "give a JSON array of series"}},
		{"malformed", Command{Source: FileSource(file("bad.json", "[{\"scenario\": \"a\",\n \"points\": [}]")), Format: "text"}, []string{"is not a JSON array of series", "line 2", "give a JSON array of series"}},
		{"wrong shape", Command{Source: FileSource(file("obj.json", `{"scenario":"a"}`)), Format: "text"}, []string{"is not a JSON array of series", "give a JSON array"}},
		{"directory", Command{Source: FileSource(dir), Format: "text"}, []string{"is not a regular file"}},
		{"empty", Command{Source: FileSource(file("empty.json", "[]")), Format: "text"}, []string{"holds no series"}},
		{"unknown figure", Command{Source: FileSource(good), Format: "text", Filter: Filter{Figure: "p42"}}, []string{`--figure "p42": unknown figure`, "reserve.p99, throughput"}},
		{"unknown scenario", Command{Source: FileSource(good), Format: "text", Filter: Filter{Scenario: "nosuch"}}, []string{`--scenario "nosuch"`, "use one of synthetic"}},
		{"unknown format", Command{Source: FileSource(good), Format: "pdf"}, []string{`--format "pdf"`, "text, markdown, html"}},
		{"negative last", Command{Source: FileSource(good), Format: "text", Filter: Filter{Last: -1}}, []string{"--last -1"}},
		{"alpha out of range", Command{Source: FileSource(good), Format: "text", Options: Options{Alpha: 1.5, Permutations: 199, MinSize: 4}}, []string{"--alpha 1.5", "at least 0.001 and below 1"}},
		{"min nights 1", Command{Source: FileSource(good), Format: "text", Options: Options{Alpha: 0.05, Permutations: 199, MinSize: 1}}, []string{"--min-nights 1", "at least 2"}},
		{"unsorted", Command{Source: func() ([]Series, error) { return unsorted, nil }, Format: "text"}, []string{"night 4", "older than the night before", "sort the points"}},
		{"unwritable -o", Command{Source: FileSource(good), Format: "text", Out: filepath.Join(dir, "no", "dir", "t.txt")}, []string{"-o ", "give a writable file path"}},
	}
	for _, tc := range cases {
		if tc.c.Options == (Options{}) {
			tc.c.Options = DefaultOptions
		}
		var out bytes.Buffer
		err := tc.c.Run(&out)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
		if out.Len() != 0 {
			t.Errorf("%s: wrote output on error: %q", tc.name, out.String())
		}
	}
}

// TestDetectIsDeterministic: the same series and options give the same
// change points and p-values (the permutations are seeded).
func TestDetectIsDeterministic(t *testing.T) {
	s := nights(5, 0.1, levels(30, []int{12}, []float64{1.3}))
	a, b := Detect(s, DefaultOptions), Detect(s, DefaultOptions)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if len(a) == 0 || !bytes.Equal(ja, jb) {
		t.Errorf("two runs differ or found nothing:\n%s\n%s", ja, jb)
	}
}
