package faults

import "fmt"

// ActedAnyway is implemented by kinds whose Inject can fail after the
// fault has already acted on the system (a slot migration that marked its
// slot MIGRATING and moved keys, then stopped on an error). It is asked
// once Inject has returned an error, and again after the heal: acted is
// true when the fault took effect all the same, and outcome says how far
// it got and how it ended ("slot 7616 stopped at phase migrating after 64
// of 65 keys; the heal finished the move"); acted false means it left
// nothing acting, and outcome says what it did reach.
type ActedAnyway interface {
	ActedDespiteError() (outcome string, acted bool)
}

// Effect is whether a planned fault took effect, for the verdict "every
// planned fault injected".
type Effect struct {
	// Took: the fault acted. Inject returned nil, or it returned an error
	// after the fault had acted (ActedAnyway).
	Took bool
	// Detail is why it did not take effect (never injected, or Inject's
	// error), or for one that took effect though Inject failed, Inject's
	// error and the fault's outcome; "" for a clean injection.
	Detail string
}

// Effect reports whether p took effect and, when not cleanly, why.
func (p *Planned) Effect() Effect {
	w := p.Window()
	switch {
	case !w.Injected:
		return Effect{Detail: "never injected (the load ended or was interrupted before its time)"}
	case w.InjectErr == nil:
		return Effect{Took: true}
	}
	if a, ok := p.Fault.(ActedAnyway); ok {
		outcome, acted := a.ActedDespiteError()
		if acted {
			return Effect{Took: true, Detail: fmt.Sprintf("took effect though inject failed (%v): %s", w.InjectErr, outcome)}
		}
		if outcome != "" {
			return Effect{Detail: fmt.Sprintf("%v (%s)", w.InjectErr, outcome)}
		}
	}
	return Effect{Detail: w.InjectErr.Error()}
}
