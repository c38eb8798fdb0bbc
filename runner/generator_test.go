package runner

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
)

// Generators of one split load never share a user or a request id, stay
// inside the total user count, and are deterministic; 0/1 is the whole load.
func TestGeneratorsNeverCollide(t *testing.T) {
	mix := Mix{Replay: 0.1, SameUser: 0.1, ForeignRequest: 0.1, Release: 0.05}
	buckets := func(u uint32) uint32 { return u % 3 }
	const users, ops = 997, 20000
	for _, n := range []int{2, 3, 5} {
		userOwner := map[uint32]int{}
		reqOwner := map[uint32]int{}
		for i := 0; i < n; i++ {
			g := history.Generator{Index: i, Count: n}
			w := NewGeneratorWorkload(7, users, mix, buckets, g)
			again := NewGeneratorWorkload(7, users, mix, buckets, g)
			w.StartSegment(ops/2, Mix{Replay: 0.5})
			again.StartSegment(ops/2, Mix{Replay: 0.5})
			kinds := map[history.Kind]int{}
			for op := uint64(0); op < ops; op++ {
				k, u, r := w.Op(op)
				if k2, u2, r2 := again.Op(op); k2 != k || u2 != u || r2 != r {
					t.Fatalf("%s op %d not deterministic", g, op)
				}
				kinds[k]++
				if int(u)%n != i || int(r)%n != i || u >= users {
					t.Fatalf("%s op %d: user %d request %d not ≡ %d mod %d (or beyond %d users)", g, op, u, r, i, n, users)
				}
				if o, ok := userOwner[u]; ok && o != i {
					t.Fatalf("user %s used by generators %d and %d of %d", history.UserID(u), o, i, n)
				}
				if o, ok := reqOwner[r]; ok && o != i {
					t.Fatalf("request %s used by generators %d and %d of %d", history.RequestID(r), o, i, n)
				}
				userOwner[u], reqOwner[r] = i, i
			}
			if len(kinds) != 5 {
				t.Errorf("%s: kinds %v: want all five", g, kinds)
			}
		}
		if len(userOwner) < users*9/10 {
			t.Errorf("%d generators used %d of %d users", n, len(userOwner), users)
		}
	}
	// One generator is the whole load, op for op.
	whole := NewWorkload(7, users, mix, buckets)
	one := NewGeneratorWorkload(7, users, mix, buckets, history.Generator{Index: 0, Count: 1})
	for op := uint64(0); op < ops; op++ {
		k, u, r := whole.Op(op)
		if k2, u2, r2 := one.Op(op); k != k2 || u != u2 || r != r2 {
			t.Fatalf("0/1 differs from the whole load at op %d", op)
		}
	}
}

func TestParseGenerator(t *testing.T) {
	if g, err := history.ParseGenerator("1/3"); err != nil || g != (history.Generator{Index: 1, Count: 3}) || !g.Split() || g.String() != "1/3" {
		t.Fatalf("1/3: %v %v", g, err)
	}
	for _, bad := range []string{"3/3", "-1/2", "1", "a/b", "0/0", "1/0"} {
		if _, err := history.ParseGenerator(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	c := DefaultConfig()
	c.Users, c.Generator = 2, history.Generator{Index: 0, Count: 3}
	if err := c.Validate(); err == nil {
		t.Error("2 users for 3 generators accepted")
	}
}

// WriteJSONL then ReadJSONL gives the history back (to the microsecond).
func TestHistoryJSONLRoundTrip(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 40, 2)
	cfg := DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 400, 500*time.Millisecond, 100, 8
	cfg.Mix = Mix{Replay: 0.1, SameUser: 0.1, ForeignRequest: 0.1, Release: 0.1}
	res, err := Run(context.Background(), cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.History.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := history.ReadJSONL(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Ops) != len(res.History.Ops) || len(back.Ops) == 0 {
		t.Fatalf("%d ops back, %d written", len(back.Ops), len(res.History.Ops))
	}
	for i := range back.Ops {
		want := res.History.Ops[i]
		want.Flags &^= history.FlagEvalFallback
		us := func(d time.Duration) time.Duration { return d.Truncate(time.Microsecond) }
		want.Intended, want.Start, want.End = us(want.Intended), us(want.Start), us(want.End)
		if want.Outcome != history.OutcomeError {
			want.ErrClass = history.ErrNone
		}
		if want.Outcome == history.OutcomeDropped {
			want.Start, want.End = 0, 0
		}
		if !reflect.DeepEqual(back.Ops[i], want) {
			t.Fatalf("op %d:\n got %+v\nwant %+v", i, back.Ops[i], want)
		}
	}
	if _, err := history.ReadJSONL(bytes.NewReader([]byte("{\"op\":1,\"kind\":\"fresh\",\"user\":\"x1\"}\n"))); err == nil {
		t.Error("a bad user id was accepted")
	}
}

// A generator of a split load skips I2 and I9 (judged on the merge) and
// still judges the checks its own users and requests decide.
func TestSplitGeneratorSkipsGlobalChecks(t *testing.T) {
	clustertest.Need(t)
	tgt := newTarget(t, 30, 2)
	cfg := DefaultConfig()
	cfg.Shape.Rate, cfg.Duration, cfg.Users, cfg.Concurrency = 400, 500*time.Millisecond, 200, 8
	cfg.Generator = history.Generator{Index: 1, Count: 2}
	res, err := Run(context.Background(), cfg, tgt.Sale(), tgt.System())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.History.Ops {
		if o.User%2 != 1 || o.Req%2 != 1 {
			t.Fatalf("op %d: user %d request %d outside generator 1/2", o.ID, o.User, o.Req)
		}
	}
	chk, err := Verify(context.Background(), tgt, CheckInput{History: res.History, Samples: res.Samples, Generator: cfg.Generator})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chk.Checks {
		switch c.ID {
		case "I2", "I9":
			if c.Status != StatusSkip || c.Evidence["judged_on"] != "merge" {
				t.Errorf("%s: %s %q", c.ID, c.Status, c.Detail)
			}
		case "I1", "I3", "I4", "I5", "I6":
			if c.Status != StatusPass {
				t.Errorf("%s: %s %q", c.ID, c.Status, c.Detail)
			}
		}
	}
}
