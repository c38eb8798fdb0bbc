package trend

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"seckill-harness/internal/chromiumtest"
)

// TestPageInChromium renders the trend page of a planted history (a
// series with a step, a noise-only series, a series with two steps) in
// headless Chromium (internal/chromiumtest, as report.html's test) and
// asserts that every chart drew: <body data-rendered> equals the number of
// charts, each chart drew one symbol per night (counted in its SVG), each
// change point's label is drawn, and the page logged nothing to the
// console. A page whose script draws no night symbols fails the same
// judgement. The screenshot is kept under out/trend-test/ (logged).
func TestPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	bin := chromiumtest.Find(t)
	all := plantedHistory(1)
	two := nights(3, 0.08, levels(30, []int{10, 20}, []float64{1.3, 1.3}))
	two.Scenario, two.Figure = "failover-kill", "recovery"
	two.Points[12].Verdict, two.Points[13].Verdict = "fail", "inconclusive"
	// A hostile run name stays text (an <img> it made would be refused
	// by the page's CSP, and say so on the console).
	two.Points[5].Run = `<img src="https://example.invalid/x.png" onerror="document.body.setAttribute('data-errors','xss')">`
	two.Points[6].Samples = []float64{120, 130, 125}
	all = append(all, two)
	results, err := Analyze(all, Filter{}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	nightsTotal := 0
	for _, r := range results {
		nightsTotal += len(r.Series.Points)
		for _, c := range r.Changes {
			labels = append(labels, fmt.Sprintf("%+.1f%% p=%.3g", 100*c.Relative, c.PValue))
		}
	}
	if len(labels) < 3 {
		t.Fatalf("the planted history should give three change points, got %v", labels)
	}
	dir := outDir(t)
	page := filepath.Join(dir, "trend.html")
	writePage(t, page, results)
	if problems := judgePage(t, bin, page, len(results), nightsTotal, labels); len(problems) > 0 {
		t.Errorf("the trend page did not draw: %s", strings.Join(problems, "; "))
	}
	shot := filepath.Join(dir, "screenshot.png")
	_, logs := chromiumtest.Run(t, bin, "--screenshot="+shot, "--window-size=1400,2400", "--hide-scrollbars", "file://"+page)
	chromiumtest.CheckConsole(t, logs)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 50_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
	t.Logf("page %s, screenshot %s", page, shot)

	// Negative control: a script that draws no symbol per night.
	saved := trendJS
	trendJS = strings.Replace(trendJS, "symbol: 'circle'", "symbol: 'none'", 1)
	defer func() { trendJS = saved }()
	broken := filepath.Join(t.TempDir(), "trend.html")
	writePage(t, broken, results)
	if problems := judgePage(t, bin, broken, len(results), nightsTotal, labels); len(problems) == 0 {
		t.Error("a page that draws no night passes the judgement")
	} else {
		t.Logf("the page without night symbols fails as it must: %s", strings.Join(problems, "; "))
	}
}

func writePage(t *testing.T, path string, results []Result) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteHTML(f, results, DefaultOptions); err != nil {
		t.Fatal(err)
	}
}

// judgePage loads page in Chromium and lists what did not draw.
func judgePage(t *testing.T, bin, page string, charts, nightsTotal int, labels []string) []string {
	dom, logs := chromiumtest.Run(t, bin, "--dump-dom", "file://"+page)
	var problems []string
	for _, l := range strings.Split(string(logs), "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Uncaught") || strings.Contains(l, "Refused to") {
			problems = append(problems, "console: "+l)
		}
	}
	body := regexp.MustCompile(`<body[^>]*>`).FindString(string(dom))
	attr := func(tag, name string) string {
		m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return ""
		}
		return m[1]
	}
	if e := attr(body, "data-errors"); e != "" {
		problems = append(problems, "page errors: "+e)
	}
	if want := strconv.Itoa(charts); attr(body, "data-charts") != want || attr(body, "data-rendered") != want {
		problems = append(problems, fmt.Sprintf("body %s: want data-charts and data-rendered %s", body, want))
	}
	drawn := 0
	for _, c := range regexp.MustCompile(`<div[^>]*data-chart="[^"]+"[^>]*>`).FindAllString(string(dom), -1) {
		n, _ := strconv.Atoi(attr(c, "data-points"))
		drawn += n
	}
	// Each night's symbol has the border #fffffe (assets/trend.js).
	symbols := strings.Count(string(dom), `stroke="#fffffe"`)
	if drawn != nightsTotal || symbols != nightsTotal {
		problems = append(problems, fmt.Sprintf("%d nights, the charts hold %d and drew %d symbols", nightsTotal, drawn, symbols))
	}
	for _, l := range labels {
		if !regexp.MustCompile(`<text[^>]*>[↑↓] ` + regexp.QuoteMeta(l) + `</text>`).MatchString(string(dom)) {
			problems = append(problems, "change point label not drawn: "+l)
		}
	}
	return problems
}

// outDir is out/trend-test at the repository root (kept; out/ is ignored
// by git), or a temporary directory when that cannot be written.
func outDir(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", "..", "out", "trend-test"))
	if err == nil {
		if err = os.MkdirAll(root, 0o755); err == nil {
			return root
		}
	}
	t.Logf("cannot write %s (%v): the page goes to a temporary directory", root, err)
	return t.TempDir()
}
