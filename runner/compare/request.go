package compare

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"seckill-harness/runner/lifecycle"
)

// CapacityFlags are the flags of capacity's search, shared by capacity
// and compare --capacity.
var CapacityFlags = []string{"start", "factor", "max-steps", "step-duration", "slo-p99", "max-error-ratio", "precision", "confirm", "path-mix"}

// Request is what the compare command was asked, as its flags gave it.
// Which flags combine is decided here, in one place (Run).
type Request struct {
	// Given reports whether the flag was given on the command line.
	Given        func(flag string) bool
	Buckets      string
	PoolSizes    string
	LocalSoldOut time.Duration
	Mitigations  string
	Variants     []string
	Capacity     bool
	Search       CapacityOptions
}

// PlanFunc builds the scenario's plan with extra scenario settings
// (key=value, as --set takes them) after the command's own.
type PlanFunc func(sets []string) (*lifecycle.Plan, error)

// Run checks the request's flags, builds its plans through plan, and runs
// the compare it asks for: by variant (--mitigations, --variant), by pool
// size (--pool-sizes), with and without the local sold-out flag
// (--local-soldout), or by bucket count, each measuring one fixed load or,
// with --capacity, a capacity search.
func (r Request) Run(ctx context.Context, log io.Writer, plan PlanFunc, out lifecycle.Output) (passed bool, err error) {
	if r.Given("mitigations") || len(r.Variants) > 0 {
		return r.variants(ctx, log, plan, out)
	}
	counts, err := ParseBuckets(r.Buckets)
	if err != nil {
		return false, err
	}
	if !r.Capacity {
		for _, name := range CapacityFlags {
			if r.Given(name) {
				return false, fmt.Errorf("--%s applies to compare --capacity: add --capacity, or drop --%s", name, name)
			}
		}
	}
	axis, other, err := r.otherAxis()
	if err != nil {
		return false, err
	}
	p, err := plan(nil)
	if err != nil {
		return false, err
	}
	if other {
		return Compare(ctx, log, p, axis, out)
	}
	if r.Capacity {
		return CompareCapacity(ctx, log, p, BucketAxis(counts), r.Search.For(p, r.Given), out)
	}
	return Compare(ctx, log, p, BucketAxis(counts), out)
}

// For is the options for p: --start defaults to p's first phase's rate.
func (co CapacityOptions) For(p *lifecycle.Plan, given func(string) bool) CapacityOptions {
	if !given("start") {
		co.Start = p.Phases[0].Config.Shape.Rate
	}
	return co
}

// otherAxis is the axis --pool-sizes or --local-soldout asks for (other
// false: compare bucket counts); one axis at a time, without --capacity
// and --buckets.
func (r Request) otherAxis() (axis Axis, other bool, err error) {
	var given []string
	for _, name := range []string{"pool-sizes", "local-soldout"} {
		if r.Given(name) {
			given = append(given, "--"+name)
		}
	}
	switch {
	case len(given) == 0:
		return Axis{}, false, nil
	case len(given) > 1 || r.Capacity || r.Given("buckets"):
		if r.Given("buckets") {
			given = append(given, "--buckets")
		}
		if r.Capacity {
			given = append(given, "--capacity")
		}
		return Axis{}, false, fmt.Errorf("%s: compare varies one thing at a time: keep one of them", strings.Join(given, ", "))
	case r.Given("pool-sizes"):
		sizes, err := ParsePoolSizes(r.PoolSizes)
		if err != nil {
			return Axis{}, false, err
		}
		return PoolSizeAxis(sizes), true, nil
	}
	if r.LocalSoldOut <= 0 {
		return Axis{}, false, fmt.Errorf("--local-soldout %s: want a positive TTL like 1s", r.LocalSoldOut)
	}
	return LocalSoldOutAxis(r.LocalSoldOut), true, nil
}

// variants is compare --mitigations/--variant: one plan per variant (the
// scenario with the command's --set values, then the variant's).
func (r Request) variants(ctx context.Context, log io.Writer, plan PlanFunc, out lifecycle.Output) (bool, error) {
	for _, name := range append([]string{"buckets", "capacity", "pool-sizes", "local-soldout"}, CapacityFlags...) {
		if r.Given(name) {
			return false, fmt.Errorf("--%s belongs to the compare by bucket count: drop it, or drop --mitigations/--variant", name)
		}
	}
	mitigations := r.Mitigations
	if r.Given("mitigations") && strings.TrimSpace(mitigations) == "" {
		mitigations = DefaultMitigations
	}
	specs, err := ParseVariants(mitigations, r.Variants)
	if err != nil {
		return false, err
	}
	plans := make([]*lifecycle.Plan, len(specs))
	for i, v := range specs {
		if plans[i], err = plan(v.Sets); err != nil {
			return false, fmt.Errorf("variant %s: %w", v.Name, err)
		}
	}
	return Compare(ctx, log, plans[0], VariantAxis(specs, plans), out)
}
