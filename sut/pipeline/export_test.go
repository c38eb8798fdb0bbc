package pipeline

import (
	"context"

	"seckill-harness/lua"
)

// SetCommitHooks installs a test's hooks around every order transaction's
// COMMIT: before runs just before it (an error fails the commit as a lost
// connection would), after runs between the COMMIT and the Redis fence.
func SetCommitHooks(p *Pipeline, before func(messageID string) error, after func(messageID string)) {
	p.orders.commitHooks.Store(&commitHooks{before: before, after: after})
}

// SetReconcileHook installs a test's hook that every reconciliation pass
// runs between its first PostgreSQL read and its Redis read.
func SetReconcileHook(p *Pipeline, afterOrders func(final bool)) {
	p.rec.mu.Lock()
	p.rec.afterOrders = afterOrders
	p.rec.mu.Unlock()
}

// StatusOf reads the reservation's status in Redis ("" when it has no
// record), looking in every bucket of the pipeline's activity.
func StatusOf(ctx context.Context, p *Pipeline, rid string) lua.Status {
	for b := uint32(0); b < p.a.Buckets; b++ {
		if r, err := p.readRecord(ctx, p.a.Scope(b), rid); err == nil && r.found {
			return r.status
		}
	}
	return ""
}
