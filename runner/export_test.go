package runner

import (
	"context"
	"testing"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/sut"
)

// The engine's tests judge their runs with the checker (checks),
// which imports the engine: checks_test.go (package runner_test) sets
// Verify, and these test-only types carry its answer back.

// Target is a test's system under test: the reference on Store (or Path)
// for Activity.
type Target struct {
	Store    *lua.Store
	Activity *lua.Activity
	Path     sut.System // nil: the reference on Store
}

// Sale is the target's sale.
func (t Target) Sale() sut.Sale { return sut.Sale{Activity: t.Activity, IDs: t.Store} }

// System is the target's system.
func (t Target) System() sut.System {
	if t.Path != nil {
		return t.Path
	}
	return sut.NewReference(t.Store)
}

// CheckInput is the part of checks.CheckInput the engine's tests set.
type CheckInput struct {
	History   *history.History
	Samples   []history.StockSample
	Generator history.Generator
}

// Check is one verdict of checks.Check.
type Check struct {
	ID, Name, Status, Detail string
	Evidence                 map[string]any
}

// CheckReport is checks.CheckReport as the engine's tests read it.
type CheckReport struct {
	Checks []Check
	Fill   func(rep *reports.Report, h *history.History) // checks.CheckReport.Fill
}

const (
	StatusPass = "pass"
	StatusFail = "fail"
	StatusSkip = "skip"
)

// Passed reports whether no check failed.
func (r *CheckReport) Passed() bool { return len(r.Failed()) == 0 }

// Failed lists the ids of the failed checks.
func (r *CheckReport) Failed() []string {
	var ids []string
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Verify is checks.Judge, set by checks_test.go.
var Verify func(ctx context.Context, tgt Target, in CheckInput) (*CheckReport, error)

// buildReportChecked is BuildReport with the checks filled in (as the
// lifecycle does).
func buildReportChecked(res *Result, chk *CheckReport, meta ReportMeta) (*reports.Report, *reports.Recorder) {
	rep, rec := BuildReport(res, meta)
	switch {
	case chk != nil && chk.Fill != nil:
		chk.Fill(rep, res.History)
	case chk != nil: // a report without checks, as checks.CheckReport{}.Fill gives
		rep.Passed = len(rep.FailedChecks()) == 0
	}
	return rep, rec
}

// scripted drives a target by hand and records a history exactly as the
// engine does (see checks' tests for its twin).
type scripted struct {
	t   *testing.T
	tgt Target
	e   *engine
	h   history.History
}

func (s *scripted) do(k history.Kind, user, req uint32) history.Op {
	s.t.Helper()
	op := s.e.executeOp(context.Background(), history.Op{ID: uint32(len(s.h.Ops)), Kind: k, User: user, Req: req, Intended: s.e.since()})
	if op.Outcome < 0 {
		s.t.Fatalf("op %+v failed: %s", op, op.ErrClass)
	}
	s.h.Ops = append(s.h.Ops, op)
	return op
}

func (s *scripted) verify() *CheckReport {
	s.t.Helper()
	rep, err := Verify(context.Background(), s.tgt, CheckInput{History: &s.h})
	if err != nil {
		s.t.Fatal(err)
	}
	return rep
}

func (s *scripted) scope(user uint32) lua.Scope {
	a := s.tgt.Activity
	return a.Scope(a.BucketOf(history.UserID(user)))
}
