package faults

import (
	"fmt"
	"strings"
)

// ActedDespiteError implements ActedAnyway: a migration whose Inject
// failed took effect when a slot of it got as far as its source being
// marked MIGRATING (clients were redirected with ASK or TRYAGAIN, keys
// may have moved) or was finished by the heal. The outcome names, per
// slot, where Inject stopped and how many of its keys had moved by then,
// the BUSYKEY re-sends and IOERR retries, and how it ended: moved,
// finished by the heal, rolled back, or still open.
func (m *SlotMigration) ActedDespiteError() (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	acted := false
	for _, p := range m.plans {
		if p.skipped != "" {
			continue
		}
		s := fmt.Sprintf("slot %d %s→%s", p.slot, p.src.Addr, p.dst.Addr)
		stopped := p.stoppedAt
		if stopped == "" && p.phase != "done" {
			stopped = p.phase // not reached by Inject before it stopped
		}
		marked := stopped == "migrating" || stopped == "assigning"
		switch {
		case stopped == "":
			s += fmt.Sprintf(" moved: %d of %d keys in %d MIGRATE batches", p.keysMoved, p.keysBefore, p.batches)
		case marked:
			s += fmt.Sprintf(" stopped at phase %s with %d of %d keys moved", stopped, p.keysAtStop, p.keysBefore)
		default:
			s += fmt.Sprintf(" stopped at phase %s, before its source was marked MIGRATING", stopped)
		}
		if stopped == "" || marked || p.healFinished {
			acted = true
			if p.replaced > 0 {
				s += fmt.Sprintf(", %d re-sent with REPLACE after BUSYKEY", p.replaced)
			}
			if p.ioRetries > 0 {
				s += fmt.Sprintf(", %d IOERR/timeout retries", p.ioRetries)
			}
		}
		switch {
		case p.healFinished:
			s += fmt.Sprintf("; the heal finished the move (%d keys in %d MIGRATE batches in all)", p.keysMoved, p.batches)
		case p.rolledBack:
			s += "; the heal rolled it back"
		case stopped != "" && p.phase != "done":
			s += "; still open (the heal has not finished it)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; "), acted
}
