package adapter

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

var activitySeq atomic.Int64

func mustLoad(t *testing.T, path string) *File {
	t.Helper()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// KeySlot agrees with the cluster's own CLUSTER KEYSLOT.
func TestKeySlotMatchesRedis(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	for _, k := range []string{"foo", "somekey", "{user1000}.following", "a{}b", "{}{x}", "x{y", "shop:{a1:3}:stock", "{a:act1:s:sku1:v:1:b:0}", ""} {
		want, err := testRDB.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := KeySlot(k); int64(got) != want {
			t.Errorf("KeySlot(%q) = %d, Redis says %d", k, got, want)
		}
	}
}

// setUp runs f's setup for every bucket of a and removes its keys after.
func setUp(t *testing.T, f *File, a *lua.Activity) {
	t.Helper()
	ctx := context.Background()
	for b := uint32(0); b < a.Buckets; b++ {
		cmds, _, _, ok, err := f.SetupCommands(ActivityValues(a, b))
		if err != nil || !ok {
			t.Fatalf("setup: ok %v, %v", ok, err)
		}
		for _, c := range cmds {
			args := make([]any, len(c))
			for i, s := range c {
				args[i] = s
			}
			if err := testRDB.Do(ctx, args...).Err(); err != nil {
				t.Fatalf("setup %v: %v", c, err)
			}
		}
	}
}

func run(t *testing.T, f *File, op Op, v Values) (Outcome, string) {
	t.Helper()
	keys, args, err := f.Render(op, v)
	if err != nil {
		t.Fatal(err)
	}
	argv := make([]any, len(args))
	for i, s := range args {
		argv[i] = s
	}
	reply, err := testRDB.Eval(context.Background(), f.Script(op).Source, keys, argv...).Result()
	if err != nil {
		t.Fatalf("%s %v: %v", op, keys, err)
	}
	o, rid, err := f.MapReply(op, reply)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return o, rid
}

// reference.yaml is lua/reserve.lua's contract: the same KEYS and ARGV as
// the built-in call, its setup readable by lua.ReadStock, and its mapping
// decodes real replies.
func TestReferenceAdapterSpeaksTheContract(t *testing.T) {
	clustertest.Need(t)
	f := mustLoad(t, "../../docs/adapters/reference.yaml")
	if f.Script(OpReserve).SHA1 != lua.Embedded().Reserve.SHA1 {
		t.Fatalf("reference.yaml runs %s, not the embedded reserve.lua", f.Script(OpReserve).Path)
	}
	a := lua.NewActivity(fmt.Sprintf("adref%d", activitySeq.Add(1)), "sku1", 2, 1, time.Hour)
	st := lua.NewStore(testRDB, lua.Embedded(), []byte("adapter-test"))
	setUp(t, f, a)
	t.Cleanup(func() { _, _ = lua.Teardown(context.Background(), testRDB, a) })
	if s, err := lua.ReadStock(context.Background(), testRDB, a.Scope(0)); err != nil || s.Available != 2 || !s.Conserved() {
		t.Fatalf("stock after the adapter's setup: %+v, %v", s, err)
	}
	call := func(user, req string) (lua.ReserveCall, Values) {
		c, err := st.NewReserveCall(a, user, req, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return c, CallValues(a, c)
	}
	c1, v1 := call("u1", "r1")
	keys, args, _ := f.Render(OpReserve, v1)
	if fmt.Sprint(keys) != fmt.Sprint(c1.Keys()) || fmt.Sprint(args) != fmt.Sprint(c1.Args()) {
		t.Fatalf("rendered\n %v %v\nthe contract's\n %v %v", keys, args, c1.Keys(), c1.Args())
	}
	steps := []struct {
		user, req string
		want      Outcome
		rid       string
	}{
		{"u1", "r1", Accepted, c1.ReservationID},
		{"u1", "r1", Accepted, c1.ReservationID}, // the same request again: its first answer
		{"u1", "r9", UserAlreadyReserved, c1.ReservationID},
		{"u2", "r2", Accepted, ""},
		{"u3", "r3", SoldOut, ""},
	}
	for i, s := range steps {
		c, v := call(s.user, s.req)
		o, rid := run(t, f, OpReserve, v)
		want := s.rid
		if s.want == Accepted && want == "" {
			want = c.ReservationID
		}
		if o != s.want || rid != want {
			t.Errorf("step %d (%s %s): %s %q, want %s %q", i, s.user, s.req, o, rid, s.want, want)
		}
	}
}

// The example shapes' mappings decode their scripts' real replies, and
// each shape shows the behaviour its file describes.
func TestExampleShapesOnTheCluster(t *testing.T) {
	clustertest.Need(t)
	type step struct {
		op        Op
		user, req string
		want      Outcome
	}
	cases := map[string][]step{
		"cluster-safe": {
			{OpReserve, "u1", "r1", Accepted}, {OpReserve, "u1", "r1", Accepted}, {OpReserve, "u1", "r2", UserAlreadyReserved},
			{OpRelease, "u1", "r1", Released}, {OpRelease, "u1", "r1", "ALREADY_RELEASED"},
			{OpReserve, "u2", "r3", Accepted}, {OpReserve, "u3", "r4", SoldOut},
		},
		"different-idempotency": {{OpReserve, "u1", "r1", Accepted}, {OpReserve, "u1", "r1", DuplicateRequest}},
		"no-per-user-check":     {{OpReserve, "u1", "r1", Accepted}, {OpReserve, "u1", "r2", Accepted}, {OpReserve, "u1", "r3", SoldOut}},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			f := mustLoad(t, "../../docs/adapters/"+name+".yaml")
			a := lua.NewActivity(fmt.Sprintf("adex%d", activitySeq.Add(1)), "sku1", 1, 1, time.Hour)
			if name == "no-per-user-check" {
				a.Stock = 2
			}
			setUp(t, f, a)
			t.Cleanup(func() { teardown(t, f, a) })
			for i, s := range steps {
				v := ActivityValues(a, 0)
				v.User, v.Request, v.Reservation, v.TTLMs, v.Amount = s.user, s.req, "resv-"+s.req, 60_000, 1
				o, rid := run(t, f, s.op, v)
				if o != s.want {
					t.Errorf("step %d %s %s %s: %s, want %s", i, s.op, s.user, s.req, o, s.want)
				}
				if s.op == OpReserve && o == Accepted && rid != "" && rid != v.Reservation {
					t.Errorf("step %d: reservation %q, want %q", i, rid, v.Reservation)
				}
			}
		})
	}
}

// teardown deletes the keys f's teardown names for bucket 0 and requests
// r1..r4 of users u1..u3.
func teardown(t *testing.T, f *File, a *lua.Activity) {
	if f.Teardown == nil {
		return
	}
	for _, tm := range f.tmpl.teardown {
		for _, u := range []string{"u1", "u2", "u3"} {
			for _, r := range []string{"r1", "r2", "r3", "r4"} {
				v := ActivityValues(a, 0)
				v.User, v.Request, v.Reservation = u, r, "resv-"+r
				tag, _ := f.Tag(v)
				k, err := tm.render(&v, tag)
				if err == nil {
					testRDB.Del(context.Background(), k)
				}
			}
		}
	}
}
