package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"seckill-harness/internal/exitcode"
)

// Exit 3's meaning (run --json's exit_meaning, the verdict error), the
// root --help, `run --help` and the docs that state the exit codes name
// every reason a run is inconclusive (exitcode.InconclusiveReasons), so
// that a reason added in code shows up wherever exit 3 is explained.
func TestExitThreeIsExplainedAlikeInCodeHelpAndDocs(t *testing.T) {
	norm := regexp.MustCompile(`\s+`)
	texts := map[string]string{
		"exitcode.Meaning(3)":        exitcode.Meaning(exitcode.Inconclusive),
		"exitcode.ErrInconclusive":   exitcode.ErrInconclusive.Error(),
		"seckill-harness --help":     "",
		"seckill-harness run --help": "",
	}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		code, out := cli(t, args...)
		if code != exitPass {
			t.Fatalf("%v: exit %d", args, code)
		}
		texts["seckill-harness "+strings.Join(args, " ")] = out
	}
	for _, doc := range []string{"README.md", "docs/CHECKS.md", "docs/REPORT.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		texts[doc] = string(b)
	}
	for where, text := range texts {
		flat := norm.ReplaceAllString(text, " ")
		for _, reason := range exitcode.InconclusiveReasons {
			if !strings.Contains(flat, reason) {
				t.Errorf("%s does not say exit 3 may mean %q", where, reason)
			}
		}
	}
}
