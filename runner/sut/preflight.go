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
// stand is up and before its activity is set up; any finding refuses the
// load (the check table's cluster-safety check fails with the findings).
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

// Refused reports whether the pre-flight refuses the load.
func (p *Preflight) Refused() bool { return p != nil && len(p.Findings) > 0 }
