package lifecycle

import (
	"strings"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// blindSystem is the reference's reserve, release and keys without its
// status query: a system with no sut.Querier, as a team's may be.
type blindSystem struct {
	sut.System
	sut.Provisioner
}

// A system without a status query gets no query share, whoever built
// it: the share is sent as fresh reserves and the report says so, so no
// query is recorded as the harness's own error.
func TestASystemWithoutAQueryGetsNoQueryShare(t *testing.T) {
	ctx, st := oneMasterStand(t, 8, 2*time.Minute)
	cfg := runner.DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 200, 500*time.Millisecond, 1000, 4
	cfg.Mix.Query = 0.5
	p := &Plan{Name: "blind", Stand: st, Stock: 100, Buckets: 1, Phases: []runner.Phase{{Name: "load", Config: cfg}},
		PathName: "blind", Path: func(s *lua.Store) sut.System {
			ref := sut.NewReference(s)
			return blindSystem{System: ref, Provisioner: ref}
		}}
	res, err := Execute(ctx, p, Output{})
	if err != nil {
		t.Fatal(err)
	}
	queries, errs := 0, 0
	for _, o := range res.Result.History.All() {
		if o.Kind == history.KindQuery {
			queries++
		}
		if o.Outcome == history.OutcomeError {
			errs++
		}
	}
	if queries != 0 || errs != 0 {
		t.Errorf("%d queries and %d errors recorded, want none of either", queries, errs)
	}
	notes := strings.Join(res.Report.SystemUnderTest.Notes, "; ")
	if !strings.Contains(notes, "answers no status query") || !strings.Contains(notes, "query share (0.5)") {
		t.Errorf("system_under_test notes %q: want the query share said left out", notes)
	}
}
