package selftest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut"
	"seckill-harness/sut/badpaths"
)

// The whole matrix at small scale: every runnable bad path is caught by one
// of its expected invariants, the reference passes every load.
func TestMatrixCatchesEveryBadPath(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := RunMatrix(ctx, testEnv(t), MatrixOptions{Runs: 1, Seed: 7, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = m.WriteText(&text)
	t.Log("\n" + text.String())
	seen := map[string]bool{}
	refLoads := map[string]bool{}
	for _, r := range m.Rows {
		seen[r.Path] = true
		switch {
		case r.Pending != "":
			t.Errorf("pending row %+v: every bad path runs", r)
		case r.Reference:
			refLoads[r.Load] = true
			if !r.OK || r.Good != 1 {
				for _, run := range r.Runs {
					t.Errorf("reference failed under %s: %v %v", r.Load, run.Failed, run.Details)
				}
			}
		default:
			if !r.OK || r.Good != 1 {
				t.Errorf("%s not caught by %v under %s: failed %v", r.Path, r.Expect, r.Load, r.Runs[0].Failed)
			}
		}
	}
	for _, n := range badpaths.Names() {
		if !seen[n] {
			t.Errorf("%s missing from the matrix", n)
		}
	}
	for _, l := range badpaths.LoadNames() {
		if !refLoads[l] {
			t.Errorf("the reference did not run under %s", l)
		}
	}
	if !m.OK {
		t.Fatal("matrix not OK")
	}
	// release-on-send-timeout (a pipeline defect) is caught by P5's check
	// that no message is first consumed after its reservation was released;
	// the reference ran the pipeline under the same load and passed the pipeline checks.
	for _, r := range m.Rows {
		if r.Load != badpaths.LoadMQTimeout {
			continue
		}
		run := r.Runs[0]
		if run.Pipeline == nil || run.Pipeline["timeouts_stored"].(int64) == 0 {
			t.Errorf("%s under %s: the pipeline did not run or no timed-out message was delivered: %v", r.Path, r.Load, run.Pipeline)
		}
		switch r.Path {
		case badpaths.ReleaseOnSendTimeout:
			ev, _ := run.Evidence["P5"].(map[string]any)
			if n, _ := ev["released_under_undelivered_message"].(int); n == 0 || run.Pipeline["refused"].(int64) == 0 {
				t.Errorf("release-on-send-timeout: failed %v, P5 evidence %v, pipeline %v", run.Failed, ev, run.Pipeline)
			}
		case ReferenceName:
			if !run.Passed || run.Pipeline["releases"].(int64) != 0 || run.Pipeline["stuck"].(int64) != 0 {
				t.Errorf("reference under %s: failed %v, pipeline %v", r.Load, run.Failed, run.Pipeline)
			}
		}
	}
	// new-request-id-on-timeout is caught by the re-send cross-check of I5
	// (the checker hole it closes) and by H1 (a re-send answered as a new
	// request is explained by no order): no other invariant fails.
	for _, r := range m.Rows {
		if r.Path != badpaths.NewRequestIDOnTimeout {
			continue
		}
		run := r.Runs[0]
		ev, _ := run.Evidence["I5"].(map[string]any)
		others := slices.DeleteFunc(slices.Clone(run.Failed), func(id string) bool { return id == "I5" || id == "H1" })
		if run.LostReplies == 0 || !slices.Contains(run.Failed, "I5") || len(others) != 0 || ev["resent_mismatches"] != ev["violation_count"] {
			t.Errorf("new-request-id-on-timeout: lost replies %d, failed %v, I5 evidence %v", run.LostReplies, run.Failed, ev)
		}
	}
}

// A "bad" path that is in fact correct is not caught: the matrix is not OK
// (the selftest exits 1).
func TestMatrixFailsWhenABadPathGoesUncaught(t *testing.T) {
	clustertest.Need(t)
	paths := append(badpaths.All(), badpaths.Info{
		Name: "reference-in-disguise", Description: "the reference path", Why: "it is not bad", Expect: []string{"I5"}, Load: badpaths.LoadReplay,
		System: func(st *lua.Store) sut.System { return sut.NewReference(st) },
	})
	m, err := RunMatrix(context.Background(), testEnv(t), MatrixOptions{Runs: 1, Quick: true, Only: []string{"reference-in-disguise"}, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = m.WriteText(&text)
	t.Log("\n" + text.String())
	if m.OK || m.Rows[0].OK || m.Rows[0].Good != 0 || !m.Rows[1].OK || !strings.Contains(text.String(), "not caught by I5") {
		t.Fatalf("an uncaught bad path passed the matrix: %+v", m.Rows)
	}
}
