package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trend's bad input exits 2 naming the problem and the fix; good input
// exits 0 with the table (runner/trend's tests judge the figures).
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
