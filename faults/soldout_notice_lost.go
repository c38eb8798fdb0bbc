package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
)

// soldout-notice-lost: the sold-out notices of the reserve path's local
// sold-out flag are lost. Every service instance keeps a flag per bucket,
// set by a SOLD_OUT from Redis and broadcast to the other instances over
// Redis Pub/Sub; from inject to heal each instance's subscriber receives
// the notices from Redis and discards them (counted as dropped), so an
// instance learns of a sell-out only from its own SOLD_OUT answers.
// Expected: nothing is oversold (a lost notice only costs Redis calls),
// the flags still expire, and a unit released after the sell-out is sold
// again within the TTL (check L1).

const kindSoldOutNoticeLost = "soldout-notice-lost"

var soldOutNoticeLostKind = Spec{
	Kind:  kindSoldOutNoticeLost,
	Help:  "the local sold-out flag's Pub/Sub notices are dropped by every subscriber until heal (each service instance only learns a sell-out from its own SOLD_OUT); needs --local-soldout",
	Build: newSoldOutNoticeLost,
	Rules: Rules{
		// The harness's own subscribers, not the cluster.
		Destructive:   NotDestructive(),
		Overlap:       Exclusive,
		OverlapTarget: func(map[string]string) Acted { return Acted{Target: "soldout-notices"} },
		Available: func(s Setting, _ map[string]string) error {
			if !s.LocalSoldOut {
				return errors.New("fault soldout-notice-lost drops the local sold-out flag's notices, but this run's path has no flag: add --local-soldout TTL (a scenario's local_soldout: 1s)")
			}
			return nil
		},
	},
}

// SoldOutNotices is what the local sold-out flag offers this kind
// (sut.LocalSoldOut implements it): drop or apply the notices its
// subscribers receive, and say what was published, received and dropped.
type SoldOutNotices interface {
	DropNotices(on bool)
	NoticeState() map[string]any
}

type soldOutNoticeLost struct {
	mu        sync.Mutex
	ctl       SoldOutNotices
	on        bool
	injected  time.Time
	healed    time.Time
	atInject  map[string]any
	atHeal    map[string]any
	droppedIn int64
}

var _ Fault = (*soldOutNoticeLost)(nil)

func newSoldOutNoticeLost(Values) (Fault, error) { return &soldOutNoticeLost{}, nil }

func (f *soldOutNoticeLost) Kind() string   { return kindSoldOutNoticeLost }
func (f *soldOutNoticeLost) Target() string { return "sold-out notices (Pub/Sub subscribers)" }

func (f *soldOutNoticeLost) Inject(_ context.Context, env *Env) error {
	if env == nil || isNil(env.SoldOutNotices) {
		return fmt.Errorf("fault %s: this run's reserve path has no local sold-out flag (Env.SoldOutNotices is nil): add --local-soldout TTL", kindSoldOutNoticeLost)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on {
		return nil
	}
	f.ctl = env.SoldOutNotices
	f.atInject = f.ctl.NoticeState()
	f.ctl.DropNotices(true)
	f.on, f.injected = true, time.Now()
	env.logf("fault %s: the flag's subscribers drop every sold-out notice from now on", kindSoldOutNoticeLost)
	return nil
}

func (f *soldOutNoticeLost) Heal(_ context.Context, env *Env) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on || f.ctl == nil {
		return nil
	}
	f.ctl.DropNotices(false)
	f.atHeal = f.ctl.NoticeState()
	f.on, f.healed = false, time.Now()
	f.droppedIn = counter(f.atHeal, "notices_dropped") - counter(f.atInject, "notices_dropped")
	env.logf("fault %s: notices applied again; %d dropped while it lasted", kindSoldOutNoticeLost, f.droppedIn)
	return nil
}

// counter reads an integer entry of a NoticeState map (0 when absent).
func counter(m map[string]any, k string) int64 {
	switch v := m[k].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	}
	return 0
}

func (f *soldOutNoticeLost) Evidence() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := map[string]any{
		"mechanism": "every service instance's Pub/Sub subscriber receives the sold-out notices from Redis and discards them while the fault lasts",
	}
	if !f.injected.IsZero() {
		ev["injected_at"] = f.injected.Format(time.RFC3339Nano)
		ev["at_inject"] = maps.Clone(f.atInject)
	}
	if !f.healed.IsZero() {
		ev["healed_at"] = f.healed.Format(time.RFC3339Nano)
		ev["at_heal"] = maps.Clone(f.atHeal)
		ev["notices_dropped"] = f.droppedIn
	} else if f.on && f.ctl != nil {
		ev["notices_dropped"] = counter(f.ctl.NoticeState(), "notices_dropped") - counter(f.atInject, "notices_dropped")
	}
	return ev
}
