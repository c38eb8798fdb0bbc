package lifecycle

import (
	"context"
	"io"
	"testing"

	"seckill-harness/reports/results"
)

// A suite appends its own record (kind suite, its exit code, members)
// to the results history once its members ran.
func TestSuiteAppendsItsRecord(t *testing.T) {
	st, err := results.OpenDir(results.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out := Output{Dir: t.TempDir(), Log: io.Discard, Results: st}
	if err := (Suite{Name: "nightly-x"}).Run(context.Background(), out, nil); err != nil {
		t.Fatal(err)
	}
	rs, err := st.Records(context.Background(), "nightly-x")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Kind != results.KindSuite || rs[0].Verdict != "PASS" || rs[0].Exit != 0 ||
		rs[0].Figures["members"] != 0 || rs[0].Run != out.Dir || rs[0].Machine.Cores == 0 {
		t.Fatalf("records %+v: want one suite record", rs)
	}
}
