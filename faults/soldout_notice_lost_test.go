package faults

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
)

// notices stands in for the flag's control surface only (the flag itself,
// with real Pub/Sub, runs in runner/lifecycle's loaded test).
type notices struct {
	dropping atomic.Bool
	dropped  atomic.Int64
}

func (n *notices) DropNotices(on bool) { n.dropping.Store(on) }
func (n *notices) NoticeState() map[string]any {
	return map[string]any{"notices_dropped": n.dropped.Load(), "dropping": n.dropping.Load()}
}

// soldout-notice-lost refuses a run without the flag (at inject, and
// through its declared rules before the load), takes no parameter, turns
// the dropping on at inject and off at heal, and reports the notices
// dropped in between.
func TestSoldOutNoticeLostControlsTheFlag(t *testing.T) {
	p, err := Parse("soldout-notice-lost:at=1s,for=1s")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Fault.Inject(context.Background(), &Env{}); err == nil || !strings.Contains(err.Error(), "--local-soldout") {
		t.Fatalf("inject without a flag: %v", err)
	}
	if err := Available(p, Setting{Masters: 3}); err == nil || !strings.Contains(err.Error(), "--local-soldout") {
		t.Fatalf("available without a flag: %v", err)
	}
	if err := Available(p, Setting{Masters: 3, LocalSoldOut: true}); err != nil {
		t.Fatalf("available with a flag: %v", err)
	}
	if _, err := Parse("soldout-notice-lost:target=hot-master"); err == nil {
		t.Error("a parameter accepted")
	}
	n := &notices{}
	env := &Env{SoldOutNotices: n}
	if err := p.Fault.Inject(context.Background(), env); err != nil || !n.dropping.Load() {
		t.Fatalf("inject: %v, dropping %v", err, n.dropping.Load())
	}
	n.dropped.Add(7)
	if err := p.Fault.Heal(context.Background(), env); err != nil || n.dropping.Load() {
		t.Fatalf("heal: %v, dropping %v", err, n.dropping.Load())
	}
	if got := p.Fault.Evidence()["notices_dropped"]; got != int64(7) {
		t.Fatalf("evidence notices_dropped = %v", got)
	}
}
