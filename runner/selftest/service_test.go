package selftest

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/sut/badpaths"
)

// The service rows: the reference access service (sut/serve), started
// in-process for each run behind the stand's proxies, with one of its
// defects on, is caught in every run by the check named for it (S2 for
// the two that change the ids, S1 for fail-open inside slot-down's
// window without a master, S4 for timeout-is-failure), and the same
// service without a defect passes every run under both loads.
func TestMatrixCatchesServiceDefects(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	only := []string{badpaths.ServeNewRequestIDOnTimeout, badpaths.ServeFailOpen, badpaths.ServeTimeoutIsFailure, badpaths.ServeRetryWithoutIDs}
	const runs = 3
	m, err := RunMatrix(ctx, testEnv(t), MatrixOptions{Runs: runs, Seed: 5, Quick: true, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = m.WriteText(&text)
	t.Log("\n" + text.String())
	caught, refLoads := map[string]bool{}, map[string]bool{}
	for _, r := range m.Rows {
		switch {
		case r.Reference:
			if r.Path != badpaths.ServiceReference {
				t.Errorf("reference row %s under %s: want only the reference service's", r.Path, r.Load)
			}
			refLoads[r.Load] = true
			if !r.OK || r.Good != runs {
				t.Errorf("the reference service under %s passed %d/%d: %v", r.Load, r.Good, len(r.Runs), r.Failed)
			}
			for _, run := range r.Runs {
				// Not vacuous: the fault reached the service (its Redis
				// calls timed out: OUTCOME_UNKNOWN answers; its master was
				// dead: refusals, SYSTEM_BUSY).
				if r.Load == badpaths.LoadServiceLatency && run.LostReplies == 0 ||
					r.Load == badpaths.LoadServiceMasterless && run.Outcomes["fresh:ERROR"] == 0 {
					t.Errorf("the reference service under %s, run %d: %d lost replies, outcomes %v: the fault did not reach it", r.Load, run.Run, run.LostReplies, run.Outcomes)
				}
			}
		default:
			caught[r.Path] = r.OK && r.Good == runs
			if r.Path == badpaths.ServeFailOpen {
				for _, run := range r.Runs {
					if ev, _ := run.Evidence["S1"].(map[string]any); ev == nil || ev["accepted_without_master"] == 0 {
						t.Errorf("fail-open run %d: S1 evidence %v; want ACCEPTED answers inside the window without a master", run.Run, ev)
					}
				}
			}
			if !caught[r.Path] {
				t.Errorf("%s under %s caught %d/%d by %v: failed %v", r.Path, r.Load, r.Good, len(r.Runs), r.Expect, r.Failed)
			}
		}
	}
	for _, n := range only {
		if _, ok := caught[n]; !ok {
			t.Errorf("%s has no row", n)
		}
	}
	for _, l := range []string{badpaths.LoadServiceLatency, badpaths.LoadServiceMasterless} {
		if !refLoads[l] {
			t.Errorf("the reference service did not run under %s", l)
		}
	}
	if !m.OK {
		t.Fatal("matrix not OK")
	}
}

// A "service row" that is the reference service without a defect is not
// caught under the latency load (S2 and S4 do not fail on the load
// alone): the matrix is not OK, while its control passes.
func TestMatrixFailsWhenAServiceRowGoesUncaught(t *testing.T) {
	clustertest.Need(t)
	ref := badpaths.ServiceReferenceInfo()
	paths := append(badpaths.All(), badpaths.Info{
		Name: "serve-in-disguise", Description: "the reference service", Why: "it is not bad", Expect: []string{"S2", "S4"},
		Load: badpaths.LoadServiceLatency, System: ref.System, Reference: &ref,
	})
	m, err := RunMatrix(context.Background(), testEnv(t), MatrixOptions{Runs: 1, Quick: true, Only: []string{"serve-in-disguise"}, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = m.WriteText(&text)
	t.Log("\n" + text.String())
	if m.OK || len(m.Rows) != 2 || m.Rows[0].OK || m.Rows[0].Good != 0 || !m.Rows[1].OK || m.Rows[1].Path != badpaths.ServiceReference ||
		!strings.Contains(text.String(), "not caught by S2/S4") {
		t.Fatalf("an uncaught service row passed the matrix: %+v", m.Rows)
	}
}
