// Package sleep sleeps until a duration has passed or a context ends
// (For, Until), and with sub-millisecond precision for the open-loop pacer
// (Sleeper, in hrsleep.go).
package sleep

import (
	"context"
	"time"
)

// For sleeps for d or until ctx is done. It reports whether the full d
// elapsed with ctx still live: false means ctx ended (stop what you were
// doing). A d <= 0 does not sleep and reports whether ctx is still live.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Until is For up to the wall-clock instant at (a time in the past does not
// sleep).
func Until(ctx context.Context, at time.Time) bool { return For(ctx, time.Until(at)) }
