package results_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill-harness/compose"
	"seckill-harness/internal/clustertest"
	"seckill-harness/reports/results"
)

func rec(scenario string, at time.Time, p99 float64) results.Record {
	return results.Record{V: results.SchemaVersion, Kind: results.KindRun, Scenario: scenario, ScenarioHash: "h1", At: at,
		Machine: results.Machine{Cores: 2}, Verdict: "PASS", Figures: map[string]float64{"p99_ms": p99},
		Samples: map[string][]float64{results.SampleP99: {p99, p99 + 1}}}
}

var t0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)

// Writers on separate descriptors (as separate processes would be) append
// at once: every record is there, every line whole.
func TestDirStoreConcurrentAppendsKeepEveryLine(t *testing.T) {
	for _, keep := range []int{0, 60} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) { concurrentAppends(t, keep) })
	}
}

// concurrentAppends: 8 writers × 25 records; with keep 60 rotations run
// under the writers too, and exactly the newest 60 whole records stay.
func concurrentAppends(t *testing.T, keep int) {
	dir := t.TempDir()
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			st, err := results.OpenDir(results.Options{Dir: dir, Keep: keep})
			if err != nil {
				errs <- err
				return
			}
			for i := 0; i < each; i++ {
				r := rec("s", t0.Add(time.Duration(w*each+i)*time.Second), float64(w*each+i))
				r.Samples[results.SampleP99] = make([]float64, 600) // a long line: over PIPE_BUF
				errs <- st.Append(context.Background(), r)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var warnings []string
	st, _ := results.OpenDir(results.Options{Dir: dir, Warn: func(m string) { warnings = append(warnings, m) }})
	rs, err := st.Records(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	want := writers * each
	if keep > 0 {
		want = keep
	}
	if len(rs) != want || len(warnings) > 0 {
		t.Fatalf("%d records, warnings %v; want %d whole records", len(rs), warnings, want)
	}
	seen := map[float64]bool{}
	for _, r := range rs {
		seen[r.Figures["p99_ms"]] = true
	}
	if len(seen) != want {
		t.Fatalf("%d distinct records, want %d", len(seen), want)
	}
	// Each writer appends in order: what is kept of a writer is a run of
	// its newest records with no gap (a gap is an append a rotation lost).
	for w := 0; w < writers; w++ {
		last := -1
		for i := 0; i < each; i++ {
			if seen[float64(w*each+i)] {
				if last >= 0 && last != i-1 {
					t.Fatalf("writer %d: record %d kept but %d lost", w, i, i-1)
				}
				last = i
			}
		}
		if last >= 0 && last != each-1 {
			t.Fatalf("writer %d: its newest record %d lost (kept up to %d)", w, each-1, last)
		}
	}
}

// A line a crash cut short and a line of garbage are skipped with a
// warning naming file:line; the records around them are read, and the
// next append starts on a line of its own.
func TestDirStoreSkipsACorruptLineNamingIt(t *testing.T) {
	dir := t.TempDir()
	var warnings []string
	st, err := results.OpenDir(results.Options{Dir: dir, Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Append(ctx, rec("s", t0, 1)); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(st.FileOf("s"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, "this is not json\n{\"v\":1,\"kind\":\"run\",\"scen") // line 2 garbage, line 3 cut short
	f.Close()
	if err := st.Append(ctx, rec("s", t0.Add(time.Hour), 2)); err != nil {
		t.Fatal(err)
	}
	rs, err := st.Records(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Figures["p99_ms"] != 1 || rs[1].Figures["p99_ms"] != 2 {
		t.Fatalf("records %+v: want the two whole ones", rs)
	}
	want := []string{st.FileOf("s") + ":2:", st.FileOf("s") + ":3:"}
	if len(warnings) != 2 || !strings.HasPrefix(warnings[0], want[0]) || !strings.HasPrefix(warnings[1], want[1]) {
		t.Fatalf("warnings %q: want one per bad line naming %v", warnings, want)
	}
}

// Over Keep records the file keeps the newest Keep, and the rotation
// leaves no temporary file behind.
func TestDirStoreRotationKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	st, err := results.OpenDir(results.Options{Dir: dir, Keep: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A crashed rotation's temporary file: the next rotation removes it.
	if err := os.WriteFile(dir+"/.rotate-123", []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 35; i++ {
		if err := st.Append(ctx, rec("s", t0.Add(time.Duration(i)*time.Hour), float64(i))); err != nil {
			t.Fatal(err)
		}
		rs, _ := st.Records(ctx, "s")
		if len(rs) > 10 {
			t.Fatalf("after %d appends %d records: over the bound 10", i+1, len(rs))
		}
	}
	rs, _ := st.Records(ctx, "s")
	if len(rs) != 10 || rs[0].Figures["p99_ms"] != 25 || rs[9].Figures["p99_ms"] != 34 {
		t.Fatalf("kept %d records from %v to %v: want the newest 10 (25..34)", len(rs), rs[0].Figures, rs[len(rs)-1].Figures)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "s.jsonl" && e.Name() != ".lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// Records of several scenarios live in their own files; "" reads them all.
func TestDirStoreOneFilePerScenario(t *testing.T) {
	st, _ := results.OpenDir(results.Options{Dir: t.TempDir()})
	ctx := context.Background()
	_ = st.Append(ctx, rec("a/b c", t0, 1))
	_ = st.Append(ctx, rec("smoke", t0.Add(time.Minute), 2))
	if !strings.HasSuffix(st.FileOf("a/b c"), "/a_b_c.jsonl") {
		t.Errorf("file of %q: %s", "a/b c", st.FileOf("a/b c"))
	}
	one, _ := st.Records(ctx, "smoke")
	all, _ := st.Records(ctx, "")
	if len(one) != 1 || len(all) != 2 || all[0].Scenario != "a/b c" {
		t.Fatalf("smoke %d, all %d (%v)", len(one), len(all), all)
	}
}

// The PostgreSQL store against a real server: the table is created, a
// record comes back as written, the bound holds, a bad row is skipped.
func TestPGStoreRoundTrip(t *testing.T) {
	clustertest.Need(t, "PostgreSQL")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pg, err := compose.StartLocalPostgres(ctx, compose.PostgresOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	var warnings []string
	st, err := results.Open(ctx, results.Options{DBURL: pg.URL(), Keep: 3, Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if strings.Contains(st.Where(), "password") || !strings.Contains(st.Where(), results.Table) {
		t.Errorf("where %q", st.Where())
	}
	for i := 0; i < 5; i++ {
		if err := st.Append(ctx, rec("s", t0.Add(time.Duration(i)*time.Hour), float64(i))); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Append(ctx, rec("other", t0, 9))
	rs, err := st.Records(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Figures["p99_ms"] != 2 || rs[2].Figures["p99_ms"] != 4 || !rs[0].At.Equal(t0.Add(2*time.Hour)) ||
		len(rs[2].Samples[results.SampleP99]) != 2 || rs[2].Machine.Cores != 2 {
		t.Fatalf("records %+v: want the newest 3 of s as written", rs)
	}
	// A second open finds the table there; a row that is not a record is skipped.
	st2, err := results.Open(ctx, results.Options{DBURL: pg.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if err := results.PGExec(ctx, st, `INSERT INTO `+results.Table+` (scenario, at, record) VALUES ('s', now(), '{"v":1}')`); err != nil {
		t.Fatal(err)
	}
	all, err := st.Records(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || len(warnings) != 1 || !strings.Contains(warnings[0], "row id") {
		t.Fatalf("%d records, warnings %q: want 4 and one naming the row", len(all), warnings)
	}
}
