package serve

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// failure is how the degradation table sorts a failed script call.
type failure int

const (
	// failNone: Redis answered.
	failNone failure = iota
	// failUnknown: the call timed out or its reply was lost (it may have run).
	failUnknown
	// failConn: the call never reached Redis (refused dial, pool timeout).
	failConn
	// failRedirect: failover or migration in progress (MOVED/ASK left
	// over, TRYAGAIN, MASTERDOWN, LOADING, READONLY): retried, bounded.
	failRedirect
	// failClusterDown: the slot has no master (CLUSTERDOWN): fail closed.
	failClusterDown
	// failOOM: the node refuses writes (OOM): stop reserving.
	failOOM
	// failCrossSlot: the keys of a call span slots: a configuration error,
	// the SKU's circuit opens.
	failCrossSlot
	// failOther: any other Redis error (the script did not run).
	failOther
)

var failureNames = map[failure]string{
	failNone: "none", failUnknown: "outcome_unknown", failConn: "connection", failRedirect: "redirect",
	failClusterDown: "clusterdown", failOOM: "oom", failCrossSlot: "crossslot", failOther: "redis_error",
}

func (f failure) String() string { return failureNames[f] }

// classify sorts err by the degradation table. NOSCRIPT never reaches it:
// lua.Store falls back to EVAL with the source.
func classify(err error) failure {
	if err == nil {
		return failNone
	}
	if lua.IsOutcomeUnknown(err) {
		return failUnknown
	}
	var re redis.Error
	if !errors.As(err, &re) {
		// Never written (with lua's hardened client every script call
		// that reached a socket and failed is ErrOutcomeUnknown): a
		// refused or timed-out dial, a pool timeout.
		return failConn
	}
	msg := err.Error()
	has := func(p string) bool { return strings.HasPrefix(msg, p) }
	switch {
	case has("CLUSTERDOWN"):
		return failClusterDown
	case has("OOM"):
		return failOOM
	case has("CROSSSLOT"), strings.Contains(msg, "do not hash to the same slot"), strings.Contains(msg, "non local key"):
		return failCrossSlot
	case has("MOVED"), has("ASK"), has("TRYAGAIN"), has("MASTERDOWN"), has("LOADING"), has("READONLY"), has("NOSCRIPT"):
		return failRedirect
	}
	return failOther
}

// breakers are the service's circuits: per node (a call to it timed out:
// answer SYSTEM_BUSY without asking it until the hold passes, then let one
// request probe it), per SKU (CROSSSLOT), and the OOM stop.
type breakers struct {
	mu       sync.Mutex
	nodes    map[string]time.Time // node address -> open until
	skus     map[string]time.Time // activity/sku -> open until
	oomUntil time.Time
}

func newBreakers() *breakers {
	return &breakers{nodes: map[string]time.Time{}, skus: map[string]time.Time{}}
}

// open reports why a request to node for sku must not be sent now ("": it
// may), and whether it is the node's circuit (Redis unreachable) that
// says so. A node whose hold has passed is closed again: the next request
// probes it.
func (b *breakers) open(node, sku string, now time.Time) (why string, nodeDown bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case now.Before(b.skus[sku]):
		return "circuit open for " + sku + ": a call of it spanned slots (CROSSSLOT, a configuration error)", false
	case now.Before(b.oomUntil):
		return "reservations stopped: Redis answered OOM (stop reserving, alert)", false
	case node != "" && now.Before(b.nodes[node]):
		return "circuit open for node " + node + ": a call to it timed out", true
	}
	if node != "" {
		delete(b.nodes, node)
	}
	return "", false
}

// trip opens the circuit the failure calls for.
func (b *breakers) trip(f failure, node, sku string, cfg Config, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch f {
	case failUnknown:
		if node != "" {
			b.nodes[node] = now.Add(cfg.BreakerHold)
		}
	case failCrossSlot:
		b.skus[sku] = now.Add(cfg.SKUBreakerHold)
	case failOOM:
		b.oomUntil = now.Add(cfg.BreakerHold)
	}
}
