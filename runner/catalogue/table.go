package catalogue

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/reports"
)

// Row is one built-in over every repetition.
type Row struct {
	Name     string    `json:"scenario"`
	Via      string    `json:"via,omitempty"`
	Expected Outcome   `json:"expected"`
	Outcomes []Outcome `json:"outcomes"` // one per repetition, in order
	Held     int       `json:"held"`     // repetitions whose outcome met the expectation
	Runs     int       `json:"runs"`
	WallS    []float64 `json:"wall_s"`
	// Check and Detail are the last unexpected repetition's failing check
	// and the first line of its detail ("" when every repetition held).
	Check  string `json:"check,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Aggregate folds the repetitions' rows into one row per built-in (in the
// first repetition's order).
func Aggregate(reps [][]Result) []Row {
	var rows []Row
	at := map[string]int{}
	for _, rep := range reps {
		for _, r := range rep {
			i, ok := at[r.Name]
			if !ok {
				i = len(rows)
				at[r.Name] = i
				rows = append(rows, Row{Name: r.Name, Via: r.Via, Expected: r.Expected})
			}
			w := &rows[i]
			w.Outcomes = append(w.Outcomes, r.Outcome)
			w.WallS = append(w.WallS, r.WallS)
			w.Runs++
			if r.Held {
				w.Held++
			} else {
				w.Check, w.Detail = r.Check, r.Detail
			}
		}
	}
	return rows
}

// Gate sums the rows up: whether every repetition of every row held, and
// whether any run could not be judged (an error outcome).
func Gate(rows []Row) (allHeld, anyError bool) {
	allHeld = true
	for _, r := range rows {
		allHeld = allHeld && r.Held == r.Runs
		for _, o := range r.Outcomes {
			anyError = anyError || o == Error
		}
	}
	return allHeld, anyError
}

// outcomeText is a row's outcomes: "pass", or "pass:2,fail:1" when the
// repetitions differ.
func (r Row) outcomeText() string {
	n := map[Outcome]int{}
	var order []Outcome
	for _, o := range r.Outcomes {
		if n[o] == 0 {
			order = append(order, o)
		}
		n[o]++
	}
	if len(order) == 1 {
		return string(order[0])
	}
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = fmt.Sprintf("%s:%d", o, n[o])
	}
	return strings.Join(parts, ",")
}

// meanWall is the mean wall time of the row's repetitions.
func (r Row) meanWall() float64 {
	var s float64
	for _, w := range r.WallS {
		s += w
	}
	if len(r.WallS) == 0 {
		return 0
	}
	return s / float64(len(r.WallS))
}

// WriteTable prints the header line and one table row per built-in: its
// outcome(s), expectation, held/runs, mean wall time, and for a row that
// did not hold the failing check and the first line of its detail.
func WriteTable(w io.Writer, header string, rows []Row) error {
	fmt.Fprintln(w, header)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVIA\tOUTCOME\tEXPECTED\tHELD\tWALL\tFAILING CHECK")
	for _, r := range rows {
		via := r.Via
		if via == "" {
			via = "-"
		}
		check := ""
		if r.Held < r.Runs {
			check = clip(r.Check+": "+r.Detail, 140)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%.1fs\t%s\n", r.Name, via, r.outcomeText(), r.Expected, r.Held, r.Runs, r.meanWall(), check)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	allHeld, _ := Gate(rows)
	verdict := "HELD: every outcome as expected"
	if !allHeld {
		verdict = fmt.Sprintf("NOT HELD: %s", strings.Join(unheld(rows), ", "))
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

func unheld(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if r.Held < r.Runs {
			out = append(out, fmt.Sprintf("%s %d/%d", r.Name, r.Held, r.Runs))
		}
	}
	return out
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// WriteJUnit writes every run as a JUnit test case (classname
// "catalogue" or "catalogue.<suite>"; "#i" after the name when repeated):
// a run that did not hold fails with its outcome, expectation and check.
func WriteJUnit(w io.Writer, started time.Time, props map[string]string, reps [][]Result) error {
	var cases []reports.JUnitCase
	for i, rep := range reps {
		for _, r := range rep {
			c := reports.JUnitCase{Name: r.Name, Classname: "catalogue", Seconds: r.WallS, Output: string(r.Outcome)}
			if len(reps) > 1 {
				c.Name = fmt.Sprintf("%s #%d", r.Name, i+1)
			}
			if r.Via != "" {
				c.Classname += "." + r.Via
			}
			if !r.Held {
				c.Failure = fmt.Sprintf("outcome %s, expected %s: %s", r.Outcome, r.Expected, r.Check)
				c.FailureBody = r.Detail
				if r.Dir != "" {
					c.FailureBody += "\nreports: " + r.Dir
				}
			}
			cases = append(cases, c)
		}
	}
	return reports.WriteJUnitSuite(w, "catalogue", started, props, cases)
}
