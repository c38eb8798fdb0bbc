package checks

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
	"seckill-harness/sut/pipeline"
)

// loadOnly is the smallest system under test: the reference's answers,
// and nothing else (no set-up, no state read back, no wrapper to unwrap).
type loadOnly struct{ ref sut.Reference }

func (s loadOnly) Name() string { return "load-only" }
func (s loadOnly) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	return s.ref.Reserve(ctx, call)
}
func (s loadOnly) Resend(call lua.ReserveCall, send int) lua.ReserveCall {
	return s.ref.Resend(call, send)
}
func (s loadOnly) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return s.ref.Release(ctx, sc, userID, rid)
}

// The contract of the interface: a system that exposes nothing gets every
// check of the table that needs a fact of it skip, each saying what it
// does not expose — never a pass, never a crash — and the checks that
// need none (I5 compares the answers among themselves) judged, saying what
// they did not compare; even with the pipeline's and the local flag's
// checks in the report; the reference, on the very same run, gets them
// judged (and passing: a correct run).
func TestSystemThatExposesNothingSkipsEveryCheck(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	tgt := newTarget(t, 40, 2)
	cfg := smallConfig()
	cfg.Duration, cfg.Users = time.Second, 200 // demand above stock: it sells out, releases, replays
	bare := loadOnly{ref: sut.NewReference(tgt.Store)}
	if _, ok := sut.Ability[sut.StateReader](bare); ok || len(sut.Exposed(bare)) != 0 {
		t.Fatal("the load-only system exposes something")
	}
	res, err := runner.Run(ctx, cfg, tgt.sale(), bare)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != 0 {
		t.Fatalf("%d stock samples of a system that does not expose its stock", len(res.Samples))
	}
	in := CheckInput{History: res.History, Pipeline: &pipeline.Evidence{}, LocalSoldOutTTL: time.Second}
	judge := func(sys sut.System) *CheckReport {
		t.Helper()
		f, err := CollectFacts(ctx, tgt.sale(), sys, in)
		if err != nil {
			t.Fatal(err)
		}
		f.EndToEnd = &EndToEndFacts{PG: &pipeline.OrderFacts{}, Accepted: map[string]uint32{}, Drained: true,
			Recon: pipeline.Reconciliation{Final: &pipeline.ReconcilePass{}}}
		return JudgeFacts(f)
	}
	rep := judge(bare)
	tableJudged := 0
	for _, inv := range Invariants() {
		if !inv.Service { // judged only in runs against a service (service_test.go)
			tableJudged++
		}
	}
	if len(rep.Checks) != tableJudged {
		t.Fatalf("%d checks judged, the table has %d (not counting the service checks)", len(rep.Checks), tableJudged)
	}
	needs := map[string]bool{}
	for _, inv := range Invariants() {
		needs[inv.ID] = len(inv.Needs) > 0 && !inv.FromAnswers // I3, I4: judged from the answers
	}
	for _, c := range rep.Checks {
		switch {
		case c.ID == "A1":
			// Judges the pre-flight's findings, not the system's state: a
			// system without a pre-flight (not an adapter file) skips.
			if c.Status != StatusSkip || !strings.Contains(c.Detail, "not an adapter file") {
				t.Errorf("A1: %s %q, want skip: not an adapter file", c.Status, c.Detail)
			}
		case c.ID == "R1":
			// Judges the service child's connections, not the system's
			// state: a run without a service child skips.
			if c.Status != StatusSkip || !strings.Contains(c.Detail, "no service child") {
				t.Errorf("R1: %s %q, want skip: no service child", c.Status, c.Detail)
			}
		case c.ID == "H1":
			// Judged from the answers alone (the pipeline's releases are
			// operations of the model): it needs nothing of the system.
			if c.Status != StatusPass || !strings.Contains(c.Detail, "user and 2 bucket partitions") {
				t.Errorf("H1: %s %q, want judged from the answers", c.Status, c.Detail)
			}
		case needs[c.ID] && (c.Status != StatusSkip || !strings.HasPrefix(c.Detail, "this system under test does not expose ")):
			t.Errorf("%s: %s %q, want skip: this system under test does not expose …", c.ID, c.Status, c.Detail)
		case !needs[c.ID] && (c.Status == StatusSkip || !strings.Contains(c.Detail, "not compared: this system under test does not expose ")):
			// A check that needs nothing of the system (I5: the answers
			// among themselves) is judged, saying what it did not compare.
			t.Errorf("%s: %s %q, want judged, saying what it did not compare", c.ID, c.Status, c.Detail)
		}
	}
	t.Logf("load-only: %s", rep.Checks[0].Detail)
	// Without records no acknowledged reservation can be found missing:
	// lost_acks is "not judged", never "every ack lost".
	if len(rep.LostAcks) != 0 || !strings.Contains(rep.LostAcksNotJudged, string(sut.Records)) {
		t.Errorf("load-only: %d lost acks (not judged: %q), want none counted and the reason", len(rep.LostAcks), rep.LostAcksNotJudged)
	}

	ref := judge(sut.NewReference(tgt.Store))
	judged := 0
	for _, c := range ref.Checks {
		if strings.Contains(c.Detail, "does not expose") {
			t.Errorf("%s: the reference exposes every fact: %s", c.ID, c.Detail)
		}
		if c.Status == StatusPass && strings.HasPrefix(c.ID, "I") {
			judged++
		}
	}
	for _, id := range []string{"I1", "I2", "I3", "I4", "I6", "I8", "K1"} {
		if c := checkByID(t, ref, id); c.Status != StatusPass {
			t.Errorf("reference: %s %s %s", id, c.Status, c.Detail)
		}
	}
	if ref.LostAcksNotJudged != "" {
		t.Errorf("reference: lost acks not judged: %s", ref.LostAcksNotJudged)
	}
	t.Logf("reference: %d core checks pass on the same run", judged)
}
