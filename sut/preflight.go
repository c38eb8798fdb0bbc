package sut

import (
	"context"
	"fmt"

	"seckill-harness/lua"
)

// Preflighter is the ability to try the system on the stand before any
// load: sample calls on a throwaway activity, reporting what the cluster
// will not let the system do under load (an adapter file's script that
// touches keys it does not pass in KEYS, say). The run calls it once the
// stand is up and before its activity is set up; the check table's
// cluster-safety check fails with any finding, and a finding that
// Refuses refuses the load (the others let it run, so the other checks
// and the faults show what the finding costs).
type Preflighter interface {
	// Preflight tries the system on a throwaway activity derived from a
	// (never a's own keys) and removes what it wrote. No finding: nil.
	// The error is for what is no finding: Redis unreachable, a set-up
	// that fails, a failed clean-up.
	Preflight(ctx context.Context, a *lua.Activity) ([]Finding, error)
}

// Finding is one place where a pre-flight found the system unfit to load,
// in a team's words.
type Finding struct {
	Problem string   // "not cluster-safe", "script fails"
	Kind    string   // what, e.g. "key-not-in-keys", "keys-in-different-slots", "script-error"
	Where   string   // file:line to fix (the script's, or the adapter file's)
	Keys    []string // the keys at fault, as the sample call rendered them
	Detail  string   // what is wrong and what to do
	// Refuses: the load is refused for it (Redis itself refused a sample
	// call here, so the load would fail the same way; or the system asks
	// for the strict refusal of every finding).
	Refuses bool
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s (%s): %s", f.Where, f.Problem, f.Kind, f.Detail)
}

// Preflight is what a run's pre-flight found: the facts of the check
// table's cluster-safety check. A run whose system has no Preflighter has
// none (the check then skips).
type Preflight struct {
	System   string // the system tried (System.Name)
	Findings []Finding
}

// Refused reports whether the pre-flight refuses the load: one of its
// findings Refuses.
func (p *Preflight) Refused() bool {
	if p == nil {
		return false
	}
	for _, f := range p.Findings {
		if f.Refuses {
			return true
		}
	}
	return false
}
