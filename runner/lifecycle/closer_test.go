package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// closingSystem is the reference path with a Close (io.Closer), as a
// system that starts something in its Setup has; setupErr makes its
// Setup fail.
type closingSystem struct {
	sut.Reference
	setupErr error
	closed   int
}

func (c *closingSystem) Setup(ctx context.Context, a *lua.Activity) error {
	if c.setupErr != nil {
		return c.setupErr
	}
	return c.Reference.Setup(ctx, a)
}

func (c *closingSystem) Close() error { c.closed++; return nil }

// A system under test that is an io.Closer is closed once when the run
// ends: after a whole run, and when its own Setup fails (the run ends
// with that error, nothing it started left running).
func TestExecuteClosesASystemThatIsACloser(t *testing.T) {
	ctx, st := oneMasterStand(t, 8, 2*time.Minute)
	for _, setupErr := range []error{nil, errors.New("setup refused on purpose")} {
		var sys *closingSystem
		cfg := runner.DefaultConfig()
		cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 100, 500*time.Millisecond, 1000, 4
		p := &Plan{Name: "closer", Stand: st, Stock: 100, Buckets: 1, Phases: []runner.Phase{{Name: "load", Config: cfg}},
			PathName: "closer", Path: func(s *lua.Store) sut.System {
				sys = &closingSystem{Reference: sut.NewReference(s), setupErr: setupErr}
				return sys
			}}
		_, err := Execute(ctx, p, Output{})
		switch {
		case setupErr == nil && err != nil:
			t.Fatal(err)
		case setupErr != nil && (err == nil || !strings.Contains(err.Error(), setupErr.Error())):
			t.Fatalf("a failed Setup: %v; want its error", err)
		case sys == nil || sys.closed != 1:
			t.Fatalf("setup error %v: the system was closed %d times, want once", setupErr, sys.closed)
		}
	}
}
