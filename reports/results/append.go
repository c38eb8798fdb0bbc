package results

import (
	"context"
	"fmt"
	"io"
	"time"

	"seckill-harness/internal/exitcode"
	"seckill-harness/reports"
)

// Summary is the record of a command that is not one run (a suite, an
// explore, …): its name, start, exit code and figures, with the harness
// and the machine of now.
func Summary(kind, name string, at time.Time, exit int, figures map[string]float64) Record {
	m := machineOf(nil)
	m.Cores = numCPU()
	if l, ok := load1(); ok {
		m.Load1 = l
	}
	return Record{V: SchemaVersion, Kind: kind, Scenario: name, At: at.UTC(), Harness: harnessNow(), Machine: m,
		Exit: exit, Verdict: exitcode.Verdict(exit), Figures: figures}
}

// AppendReport appends rep's record (FromReport with kind and dir) to st,
// when st is set. A failure is printed to errOut (when set) and returned:
// callers log it and keep their verdict.
func AppendReport(ctx context.Context, st Store, rep *reports.Report, kind, dir string, errOut io.Writer) error {
	if st == nil || rep == nil {
		return nil
	}
	return Put(ctx, st, FromReport(rep, kind, dir), errOut)
}

// Put appends r to st (when set), within 30 s; a failure is printed to
// errOut (when set) and returned.
func Put(ctx context.Context, st Store, r Record, errOut io.Writer) error {
	if st == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := st.Append(ctx, r)
	if err != nil && errOut != nil {
		fmt.Fprintf(errOut, "error: results history: the %s record of %s was not appended: %v\n", r.Kind, r.Scenario, err)
	}
	return err
}
