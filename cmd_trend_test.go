package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trend's bad input exits 2 naming the problem and the fix; good input
// exits 0 with the table (reports/trend's tests judge the figures).
func TestTrendExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"scenario":"sold-out-90","figure":"reserve.p99","unit":"ms","points":[{"at":"2026-11-01T02:00:00Z","value":1.9,"verdict":"pass"},{"at":"2026-11-02T02:00:00Z","value":2.0,"verdict":"fail"}]}]`)
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"trend"}, exitHarnessError, []string{"pass --results-history DIR", "or --series FILE"}},
		{[]string{"trend", "--results-history", filepath.Join(dir, "nohistory")}, exitHarnessError, []string{"nohistory: no results history there", "run --results-history DIR"}},
		{[]string{"trend", "--results-history", dir, "--series", filepath.Join(dir, "x.json")}, exitHarnessError, []string{"give one source of series"}},
		{[]string{"trend", "--series", filepath.Join(dir, "missing.json")}, exitHarnessError, []string{"missing.json", "no such file", "give a JSON array of series"}},
		{[]string{"trend", "--series", write("bad.json", "[{")}, exitHarnessError, []string{"is not a JSON array of series", "line 1"}},
		{[]string{"trend", "--series", good, "--figure", "p42"}, exitHarnessError, []string{`unknown figure`, "reserve.p99"}},
		{[]string{"trend", "--series", good, "--format", "pdf"}, exitHarnessError, []string{"use one of text, markdown, html"}},
		{[]string{"trend", "--series", good, "--format", "markdown"}, 0, []string{"| sold-out-90 | reserve.p99 | 2 | 2.00 ms |", "1 fail, 1 pass (last: fail)"}},
	} {
		code, out := cli(t, c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d:\n%s", c.args, code, c.code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output does not say %q:\n%s", c.args, w, out)
			}
		}
	}
}

// trend writes files with --out DIR like every other command (under the
// fixed name of its format), and -o FILE, the single-file form, keeps
// working and writes the same bytes; both at once is refused with exit 2
// and nothing written.
func TestTrendOutDirAndSingleFileForm(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`[{"scenario":"sold-out-90","figure":"reserve.p99","unit":"ms","points":[{"at":"2026-11-01T02:00:00Z","value":1.9,"verdict":"pass"},{"at":"2026-11-02T02:00:00Z","value":2.0,"verdict":"fail"}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ format, name string }{{"text", "trend.txt"}, {"markdown", "trend.md"}, {"html", "trend.html"}} {
		outDir := filepath.Join(dir, "out-"+c.format, "nested")
		single := filepath.Join(dir, "single-"+c.name)
		if code, out := cli(t, "trend", "--series", good, "--format", c.format, "--out", outDir); code != 0 || !strings.Contains(out, filepath.Join(outDir, c.name)) {
			t.Fatalf("trend --format %s --out DIR: exit %d, want 0 naming %s:\n%s", c.format, code, c.name, out)
		}
		if code, out := cli(t, "trend", "--series", good, "--format", c.format, "-o", single); code != 0 {
			t.Fatalf("trend --format %s -o FILE: exit %d:\n%s", c.format, code, out)
		}
		got, err := os.ReadFile(filepath.Join(outDir, c.name))
		if err != nil {
			t.Fatalf("--out %s wrote no %s: %v", outDir, c.name, err)
		}
		want, err := os.ReadFile(single)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || string(got) != string(want) {
			t.Errorf("--format %s: --out DIR/%s (%d bytes) differs from -o FILE (%d bytes)", c.format, c.name, len(got), len(want))
		}
	}
	both := filepath.Join(dir, "both")
	code, out := cli(t, "trend", "--series", good, "--out", both, "-o", filepath.Join(dir, "x.txt"))
	if code != exitHarnessError || !strings.Contains(out, "give one") {
		t.Errorf("--out and -o together: exit %d, want %d naming the fix:\n%s", code, exitHarnessError, out)
	}
	if _, err := os.Stat(both); !os.IsNotExist(err) {
		t.Errorf("a refused --out left %s behind (%v)", both, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("a refused -o left x.txt behind (%v)", err)
	}
}
