package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
)

// exitMeanings are the exit codes as run --json states them.
var exitMeanings = map[int]string{
	exitPass:         "every check passed",
	exitCheckFailed:  "a check or assertion failed",
	exitHarnessError: "harness or usage error: the run could not be judged",
	exitInconclusive: "inconclusive: the stand could not sustain the plan",
}

// runJSON is run --json's one object on stdout: the verdict, the exit
// code the process ends with and what it means, the error of an exit 2,
// and the summary of each run (one, or one per suite member that
// finished, in order).
type runJSON struct {
	Verdict     string               `json:"verdict"` // PASS, FAIL, ERROR or INCONCLUSIVE
	ExitCode    int                  `json:"exit_code"`
	ExitMeaning string               `json:"exit_meaning"`
	Error       string               `json:"error,omitempty"`
	Runs        []reports.RunSummary `json:"runs"`
}

// jsonSummary collects the runs of one command for --json.
type jsonSummary struct {
	runs []reports.RunSummary
}

// onOutcome is a lifecycle.Output.OnOutcome that records each run.
func (j *jsonSummary) onOutcome(dir string, oc *lifecycle.Result) {
	j.runs = append(j.runs, reports.SummaryOf(oc.Report, dir))
}

// write prints the one JSON object for the command's error err (nil: pass).
func (j *jsonSummary) write(w io.Writer, err error) error {
	code := exitPass
	switch {
	case err == nil:
	case errors.Is(err, errChecksFailed):
		code = exitCheckFailed
	case errors.Is(err, errInconclusive):
		code = exitInconclusive
	default:
		code = exitHarnessError
	}
	v := runJSON{Verdict: [...]string{"PASS", "FAIL", "ERROR", "INCONCLUSIVE"}[code], ExitCode: code, ExitMeaning: exitMeanings[code],
		Runs: j.runs}
	if code == exitHarnessError {
		v.Error = err.Error()
	}
	if v.Runs == nil {
		v.Runs = []reports.RunSummary{}
	}
	if werr := writeJSON(w, v); werr != nil {
		return werr
	}
	return err
}

// addRunJSON gives run --json: the human summary goes to stderr and
// stdout gets one runJSON object, whatever the outcome (exit 2 included).
func addRunJSON(cmd *cobra.Command, o *runOptions) {
	cmd.Flags().BoolVar(&o.json, "json", false, "print the final summary as one JSON object on stdout (verdict, exit_code and its meaning, error, and per run: key figures and the paths of the files written); the human summary goes to stderr instead")
	runE := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !o.json {
			return runE(cmd, args)
		}
		o.summary = &jsonSummary{}
		return o.summary.write(cmd.OutOrStdout(), runE(cmd, args))
	}
}

// countingWriter counts what a command wrote to stdout: run() adds the
// --json error object only when the command wrote nothing.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// wantsJSON reports whether args ask the command they name for --json
// (the flag may not have been parsed: a usage error stops cobra first).
func wantsJSON(root *cobra.Command, args []string) bool {
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
