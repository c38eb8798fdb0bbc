package reports

import (
	"os"
	"path/filepath"
	"regexp"
	"seckill-harness/internal/chromiumtest"
	"strconv"
	"strings"
	"testing"
)

// TestHTMLInChromium loads report.html pages in headless Chromium (Debian's
// chromium; installed by testdata/ensure-chromium.sh, which make deps runs
// and this test runs itself when it is root) and asserts that every chart
// rendered (the page's own <body data-rendered> count, and an SVG in each
// chart), that the page logged nothing to the console (no error, no CSP
// violation: it loads nothing from outside), and keeps a screenshot of each
// page under out/report-test/ at the repository root (logged).
//
// Pages: a report re-rendered from a real 10 s failover run saved by the
// CLI (testdata/failover-run: report.json + latency.hlog), a synthetic
// failed failover run written by WriteArtifacts, a merge of two load
// generators, and a report with the optional compare and capacity
// sections.
func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	bin := chromium(t)
	outRoot := screenshotRoot(t)

	pages := map[string]func(dir string) error{
		"real-failover-run": func(dir string) error {
			run, err := LoadRun(filepath.Join("testdata", "failover-run"))
			if err != nil {
				return err
			}
			return WriteArtifacts(dir, &Inputs{Report: run.Report, Hists: run.Hists})
		},
		"synthetic-failover": func(dir string) error {
			rep, rec := syntheticFailoverRun()
			return WriteArtifacts(dir, &Inputs{Report: rep, Hists: rec.Histograms()})
		},
		"merged-two-generators": func(dir string) error {
			dirs, _ := twoGenerators(t)
			var runs []*Run
			for _, d := range dirs {
				r, err := LoadRun(d)
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			rep, h, _, err := MergeRuns(runs)
			if err != nil {
				return err
			}
			return WriteArtifacts(dir, &Inputs{Report: rep, Hists: h})
		},
		"servers": func(dir string) error {
			rep, rec := syntheticFailoverRun()
			withServers(rep)
			return WriteArtifacts(dir, &Inputs{Report: rep, Hists: rec.Histograms()})
		},
		"pipeline": func(dir string) error {
			rep, rec := syntheticFailoverRun()
			withPipeline(rep)
			return WriteArtifacts(dir, &Inputs{Report: rep, Hists: rec.Histograms()})
		},
		"compare-capacity": func(dir string) error {
			rep, rec := syntheticFailoverRun()
			withCompareAndCapacity(rep)
			return WriteArtifacts(dir, &Inputs{Report: rep, Hists: rec.Histograms()})
		},
	}
	// servers: the two time charts, the distribution, and CPU, lag and
	// memory per node.
	wantCharts := map[string]int{"real-failover-run": 3, "synthetic-failover": 3, "merged-two-generators": 3, "compare-capacity": 5, "servers": 6, "pipeline": 3}
	for _, name := range []string{"real-failover-run", "synthetic-failover", "merged-two-generators", "compare-capacity", "servers", "pipeline"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(outRoot, name)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := pages[name](dir); err != nil {
				t.Fatal(err)
			}
			page := filepath.Join(dir, HTMLFileName)
			if fi, err := os.Stat(page); err == nil {
				t.Logf("%s: %d bytes", page, fi.Size())
			}
			url := "file://" + page

			dom, logs := runChromium(t, bin, "--dump-dom", url)
			checkConsole(t, logs)
			body := regexp.MustCompile(`<body[^>]*>`).FindString(string(dom))
			attr := func(name string) string {
				m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(body)
				if m == nil {
					return ""
				}
				return m[1]
			}
			if e := attr("data-errors"); e != "" {
				t.Errorf("the page reported errors: %s", e)
			}
			want := strconv.Itoa(wantCharts[name])
			if attr("data-charts") != want || attr("data-rendered") != want {
				t.Errorf("body %s: want data-charts and data-rendered %s", body, want)
			}
			static := withoutScripts(string(dom))
			charts := regexp.MustCompile(`<div[^>]*data-chart="[^"]+"[^>]*>`).FindAllString(static, -1)
			for _, c := range charts {
				if !strings.Contains(c, `data-rendered="true"`) {
					t.Errorf("chart not rendered: %s", c)
				}
			}
			if n := strings.Count(static, "<svg"); len(charts) != wantCharts[name] || n < len(charts) {
				t.Errorf("%d chart elements, %d SVGs", len(charts), n)
			}
			if name != "merged-two-generators" && name != "compare-capacity" {
				// The fault window is drawn and labelled on both time charts.
				// … and on the three server charts when there are any.
				want := 2
				if name == "servers" {
					want = 5
				}
				if n := strings.Count(static, "failover (kill)"); n < want {
					t.Errorf("fault window label drawn %d times, want %d", n, want)
				}
			}
			if name == "pipeline" && (!strings.Contains(static, `<section id="pipeline">`) || !strings.Contains(static, "accepted_reservation_lost")) {
				t.Error("the rendered page lacks the pipeline section and its reconciliation classes")
			}

			if !screenshotted[name] {
				return
			}
			shot := filepath.Join(dir, "screenshot.png")
			_, logs = runChromium(t, bin, "--screenshot="+shot, "--window-size=1400,3000", "--hide-scrollbars", url)
			checkConsole(t, logs)
			fi, err := os.Stat(shot)
			if err != nil || fi.Size() < 50_000 {
				t.Fatalf("screenshot %s: %v (%d bytes)", shot, err, sizeOf(fi))
			}
			t.Logf("screenshot: %s", shot)
		})
	}
}

// screenshotted are the pages also drawn into a PNG (out/report-test):
// a second browser start each, so only the two that show every section
// between them (a real run's charts; the servers' charts and tables).
var screenshotted = map[string]bool{"real-failover-run": true, "servers": true}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}

// chromium finds the browser (internal/chromiumtest, shared with the
// trend page's test).
func chromium(t *testing.T) string { return chromiumtest.Find(t) }

// screenshotRoot is out/report-test at the repository root (kept after
// the test; out/ is ignored by git), or a temporary directory when that
// cannot be written.
func screenshotRoot(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("REPORT_TEST_OUT"); d != "" {
		return d
	}
	root, err := filepath.Abs(filepath.Join("..", "out", "report-test"))
	if err == nil {
		if err = os.MkdirAll(root, 0o755); err == nil {
			return root
		}
	}
	t.Logf("cannot write %s (%v): screenshots go to a temporary directory", root, err)
	return t.TempDir()
}

// runChromium runs headless Chromium with no network (internal/chromiumtest).
func runChromium(t *testing.T, bin string, args ...string) (stdout, logs []byte) {
	t.Helper()
	return chromiumtest.Run(t, bin, args...)
}

// checkConsole fails t on any console message of the page.
func checkConsole(t *testing.T, logs []byte) { t.Helper(); chromiumtest.CheckConsole(t, logs) }
