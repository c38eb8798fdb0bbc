package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
)

// knownFlags are the Op flags a history may carry (the store's own
// bookkeeping bit must not leak into it).
const knownFlags = history.FlagReplay | history.FlagHadUnknown | history.FlagEvalFallback | history.FlagWaitSent | history.FlagWaitConfirmed | history.FlagRemaining

// spoolOf streams ops through a spooled history.Store, put in a shuffled
// slot order (as workers finish), and returns the spooled history.
func spoolOf(t *testing.T, ops []history.Op) *history.History {
	t.Helper()
	var s history.Store
	if err := s.SpoolTo(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(len(ops)) {
		s.Put(uint64(i), ops[i])
	}
	h, err := s.History()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The same run judged, reported and written as history.jsonl from memory
// and from a spool gives identical checks, report and bytes; a run with
// WithHistorySpool keeps its history on disk, in id order.
func TestSpooledHistoryJudgesAndReportsTheSame(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	tgt := newTarget(t, 300, 3)
	cfg := DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.SampleEvery = 1500, time.Second, 800, 0
	cfg.Mix = Mix{Replay: 0.1, SameUser: 0.1, ForeignRequest: 0.05, Release: 0.1}
	res, err := Run(ctx, cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	mem := res.History
	disk := spoolOf(t, mem.Ops)
	judge := func(h *history.History) (*CheckReport, []byte, []byte) {
		chk, err := Verify(ctx, tgt, CheckInput{History: h, Samples: res.Samples})
		if err != nil {
			t.Fatal(err)
		}
		r := *res
		r.History = h
		rep, _ := buildReportChecked(&r, chk, ReportMeta{})
		for i := range rep.Invariants {
			rep.Invariants[i].ElapsedMs = 0 // how long judging took: not a figure of the history
		}
		rj, _ := json.Marshal(rep)
		var hist bytes.Buffer
		if err := h.WriteJSONL(&hist); err != nil {
			t.Fatal(err)
		}
		return chk, rj, hist.Bytes()
	}
	c1, r1, h1 := judge(mem)
	c2, r2, h2 := judge(disk)
	if !reflect.DeepEqual(c1.Checks, c2.Checks) { // the rest of the checker's answer is in report.json, compared below
		t.Fatalf("checks differ:\nmemory %+v\nspool  %+v", c1.Checks, c2.Checks)
	}
	if !bytes.Equal(r1, r2) || !bytes.Equal(h1, h2) {
		t.Fatal("report.json or history.jsonl differ between memory and spool")
	}
	var judged int
	for _, c := range c1.Checks {
		if c.Status != StatusSkip {
			judged++
		}
	}
	if judged < 4 {
		t.Fatalf("only %d checks judged: %+v", judged, c1.Checks)
	}
	if a := AnalyzeSellOut(mem, tgt.Activity); !reflect.DeepEqual(a, AnalyzeSellOut(disk, tgt.Activity)) {
		t.Fatal("sell-out analysis differs")
	}

	tgt2 := newTarget(t, 300, 3)
	res2, err := Run(ctx, cfg, tgt2.Sale(), tgt2.System(), WithHistorySpool(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	h := res2.History
	if !h.Spooled() || len(h.Ops) != 0 || h.Len() < 1000 {
		t.Fatalf("spooled run: spooled=%v, %d in memory, %d in all", h.Spooled(), len(h.Ops), h.Len())
	}
	prev, n := int64(-1), 0
	for _, o := range h.All() {
		if int64(o.ID) <= prev || o.Flags&^knownFlags != 0 {
			t.Fatalf("op %d after %d (flags %x): not in id order", o.ID, prev, o.Flags)
		}
		prev = int64(o.ID)
		n++
	}
	if n != h.Len() || res2.Observed.Scheduled != int64(n)+res2.Drops.Total {
		t.Fatalf("%d read back, Len %d, scheduled %d", n, h.Len(), res2.Observed.Scheduled)
	}
	if chk, err := Verify(ctx, tgt2, CheckInput{History: h}); err != nil || !chk.Passed() {
		t.Fatalf("spooled run: %v %v", err, chk.Failed())
	}
}

// A closed-loop phase ends with ids its workers claimed but did not run;
// a spooled run counts their slots as skipped (so its chunks still reach
// the spool) and the history after them continues in id order.
func TestSpoolAcrossPhases(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	tgt := newTarget(t, 1_000_000, 2)
	closed := DefaultConfig()
	closed.Mode, closed.Concurrency, closed.Duration, closed.Users, closed.SampleEvery = ModeClosed, 8, 400*time.Millisecond, 10_000, 0
	open := closed
	open.Mode, open.Shape.Rate, open.Concurrency = ModeOpen, 500, 16
	res, err := RunPhases(ctx, []Phase{{Name: "closed", Config: closed}, {Name: "open", Config: open}, {Name: "closed again", Config: closed}},
		tgt.Sale(), tgt.System(), WithHistorySpool(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	prev, n := int64(-1), 0
	for _, o := range res.History.All() {
		if int64(o.ID) <= prev {
			t.Fatalf("op %d after %d", o.ID, prev)
		}
		prev = int64(o.ID)
		n++
	}
	if n != res.History.Len() || n < 100 || res.Phases[2].FirstOp <= res.Phases[1].FirstOp {
		t.Fatalf("%d ops read back, Len %d, phases %+v", n, res.History.Len(), res.Phases)
	}
}
