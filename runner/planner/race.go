package planner

import (
	"fmt"
	"time"

	"seckill-harness/runner"
	"seckill-harness/scenarios"
)

// Race is the scenario of `seckill-harness race`, the specification's
// first concurrency scene: users distinct users, one reserve each
// (closed loop, MaxOps = users, no duplicates, releases or I1 sampling),
// sent from concurrency workers at once against stock units in buckets.
// It asserts, besides the invariants, that exactly min(stock, users) were
// ACCEPTED and every other answer was SOLD_OUT (Assertions.Outcomes).
// f gives the topology and the flags as given (f.Load, f.Stock, f.Buckets
// and f.Name are set here); Build validates it like any scenario made from
// flags, so a bad value is refused naming its flag.
func Race(f scenarios.Flags, users, concurrency int) (*scenarios.Scenario, error) {
	if users <= 0 || concurrency <= 0 {
		return nil, fmt.Errorf("--users and --concurrency must be positive")
	}
	cfg := runner.DefaultConfig()
	cfg.Mode, cfg.Concurrency, cfg.Users, cfg.MaxOps = runner.ModeClosed, concurrency, users, users
	cfg.Duration, cfg.Mix, cfg.SampleEvery = 5*time.Minute, runner.Mix{}, 0
	f.Name, f.Load = "race", cfg
	s := scenarios.FromFlags(f)
	accepted := min(f.Stock, int64(users))
	soldOut := int64(users) - accepted
	s.Assertions.Outcomes = []scenarios.OutcomeBound{
		{Outcome: "ACCEPTED", Exactly: &accepted}, {Outcome: "SOLD_OUT", Exactly: &soldOut}}
	return s, nil
}
