package cmdline

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// RunJSON is run --json's one object on stdout: the verdict, the exit
// code the process ends with and what it means, the error of an exit 2,
// and the summary of each run (one, or one per suite member that
// finished, in order). Its field names are a contract.
type RunJSON struct {
	Verdict     string               `json:"verdict"` // PASS, FAIL, ERROR or INCONCLUSIVE
	ExitCode    int                  `json:"exit_code"`
	ExitMeaning string               `json:"exit_meaning"`
	Error       string               `json:"error,omitempty"`
	Runs        []reports.RunSummary `json:"runs"`
}

// Summary collects the runs of one command for --json.
type Summary struct {
	runs []reports.RunSummary
}

// OnOutcome is a lifecycle.Output.OnOutcome that records each run.
func (j *Summary) OnOutcome(dir string, oc *lifecycle.Result) {
	j.runs = append(j.runs, reports.SummaryOf(oc.Report, dir))
}

// Write prints the one RunJSON object for the command's error err (nil:
// pass; an error of exit 2 is in its error field) and returns err (or the
// write's error).
func (j *Summary) Write(w io.Writer, err error) error {
	code := exitcode.Of(err)
	v := RunJSON{Verdict: exitcode.Verdict(code), ExitCode: code, ExitMeaning: exitcode.Meaning(code), Runs: j.runs}
	if code == exitcode.HarnessError {
		v.Error = err.Error()
	}
	if v.Runs == nil {
		v.Runs = []reports.RunSummary{}
	}
	if werr := WriteJSON(w, v); werr != nil {
		return werr
	}
	return err
}

// AddRunJSON gives cmd --json: the human summary goes to stderr and stdout
// gets one RunJSON object, whatever the outcome (exit 2 included). While
// the command runs with --json, *summary collects its runs (the command
// passes its OnOutcome to the lifecycle); without it *summary stays nil.
func AddRunJSON(cmd *cobra.Command, summary **Summary) {
	on := cmd.Flags().Bool("json", false, "print the final summary as one JSON object on stdout (verdict, exit_code and its meaning, error, and per run: key figures and the paths of the files written); the human summary goes to stderr instead")
	runE := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !*on {
			return runE(cmd, args)
		}
		*summary = &Summary{}
		return (*summary).Write(cmd.OutOrStdout(), runE(cmd, args))
	}
}

// WriteJSON prints v as indented JSON on one write.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// CountingWriter counts what a command wrote to stdout: the --json error
// object of a usage error is added only when the command wrote nothing.
type CountingWriter struct {
	W io.Writer
	N int // bytes written so far
}

// Write writes p to W and counts it.
func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += n
	return n, err
}

// WantsJSON reports whether args ask the command they name for --json
// (the flag may not have been parsed: a usage error stops cobra first).
func WantsJSON(root *cobra.Command, args []string) bool {
	c, _, err := root.Find(args)
	if err != nil || c.Flags().Lookup("json") == nil {
		return false
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true", "--json=1":
			return true
		}
	}
	return false
}
