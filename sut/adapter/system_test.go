package adapter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

func newSystem(t *testing.T, path string, stock int64, buckets uint32) (*System, *lua.Activity, *lua.Store) {
	t.Helper()
	f := mustLoad(t, path)
	st := lua.NewStore(testRDB, lua.Embedded(), []byte("adapter-system-test"))
	s := NewSystem(f, st)
	a := lua.NewActivity(fmt.Sprintf("adsys%d", activitySeq.Add(1)), "sku1", stock, buckets, time.Hour)
	if err := s.Setup(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return s, a, st
}

// The reference contract through its adapter file is a complete system:
// it sets the activity up with its scripts cached on every master,
// reserves (a re-send answered with the first answer), reads its stock,
// records and keys back, and its teardown removes every key it listed —
// the keys a second read no longer finds.
func TestReferenceFileAsSystem(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	s, a, st := newSystem(t, "../../docs/adapters/reference.yaml", 2, 2)
	if _, ok := sut.Ability[sut.Provisioner](s); !ok {
		t.Fatal("not a Provisioner")
	}
	err := testRDB.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		ok, err := n.ScriptExists(ctx, lua.Embedded().Reserve.SHA1).Result()
		if err == nil && !ok[0] {
			err = fmt.Errorf("%s has no reserve.lua cached after Setup", n.Options().Addr)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var accepted []lua.ReserveCall
	for i := 0; i < 6; i++ {
		c, err := st.NewReserveCall(a, fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Reserve(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Attempts < 1 {
			t.Errorf("reserve %d: %d attempts counted", i, res.Attempts)
		}
		if res.Code == lua.Accepted {
			if res.ReservationID != c.ReservationID {
				t.Fatalf("ACCEPTED %q, want the call's %q", res.ReservationID, c.ReservationID)
			}
			again, err := s.Reserve(ctx, s.Resend(c, 0))
			if err != nil || again.Code != lua.Accepted || again.ReservationID != c.ReservationID {
				t.Fatalf("re-send: %+v, %v; want the first answer", again, err)
			}
			accepted = append(accepted, c)
		}
	}
	want := map[string]uint32{}
	var held int64
	for b := uint32(0); b < a.Buckets; b++ {
		stock, err := s.ReadStock(ctx, a, b)
		if err != nil || !stock.Conserved() {
			t.Fatalf("bucket %d stock %+v, %v", b, stock, err)
		}
		held += stock.Reserved
	}
	for _, c := range accepted {
		want[c.ReservationID] = c.Scope.Bucket
	}
	want["never-sent"] = 0
	recs, err := s.ReadRecords(ctx, a, want)
	if err != nil || len(recs) != len(accepted) || int64(len(accepted)) != held || len(accepted) != 2 {
		t.Fatalf("records %v (%v) of %d accepted, %d held", recs, err, len(accepted), held)
	}
	kf, err := s.ReadKeys(ctx, a, sut.KeyQuery{})
	if err != nil || kf.Space.KeysChecked == 0 || kf.Space.KeysWithoutTTL != 0 || kf.PathKeys == 0 {
		t.Fatalf("keys: %+v, %v", kf, err)
	}
	n, err := s.Teardown(ctx, a)
	if err != nil || n != kf.Space.KeysChecked {
		t.Fatalf("teardown removed %d keys (%v), the expiry read found %d", n, err, kf.Space.KeysChecked)
	}
	if kf2, err := s.ReadKeys(ctx, a, sut.KeyQuery{}); err != nil || kf2.Space.KeysChecked != 0 {
		t.Fatalf("after teardown: %d keys left (%v)", kf2.Space.KeysChecked, err)
	}
}

// A same-id re-send to a script that answers "duplicate" is
// DUPLICATE_REQUEST (lua.DuplicateRequest), not its first answer.
func TestDuplicateRequestIsItsOwnCode(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	s, a, st := newSystem(t, "../../docs/adapters/different-idempotency.yaml", 5, 1)
	t.Cleanup(func() { _, _ = s.Teardown(context.Background(), a) })
	c, _ := st.NewReserveCall(a, "u1", "r1", time.Minute)
	if res, err := s.Reserve(ctx, c); err != nil || res.Code != lua.Accepted {
		t.Fatalf("first send: %+v, %v", res, err)
	}
	res, err := s.Reserve(ctx, s.Resend(c, 0))
	if err != nil || res.Code != lua.DuplicateRequest || res.Code.String() != "DUPLICATE_REQUEST" {
		t.Fatalf("re-send: %+v (%s), %v; want DUPLICATE_REQUEST", res, res.Code, err)
	}
	if _, err := s.Release(ctx, c.Scope, "u1", c.ReservationID); !errors.Is(err, ErrNoRelease) || !s.NoRelease() {
		t.Fatalf("release of a file without release: %v", err)
	}
}

// A reply lost after the script ran is lua.ErrOutcomeUnknown and the
// script ran exactly once: the adapter's calls go through lua's no-re-send
// hook, never re-sent behind the caller's back.
func TestLostReplyIsUnknownNotASecondRun(t *testing.T) {
	clustertest.Need(t)
	ctx := context.Background()
	dir := t.TempDir()
	slow := `redis.call('INCR', KEYS[1]); redis.call('PEXPIRE', KEYS[1], 60000)
local t0 = redis.call('TIME'); repeat local t = redis.call('TIME') until (t[1]-t0[1])*1000000 + (t[2]-t0[2]) > 300000
return 1`
	yaml := `hash_tag: "lost:${activity}:${bucket}"
reserve:
  script: slow.lua
  keys: ["${tag}:runs"]
  args: ["${request}"]
  reply: {outcomes: {ACCEPTED: [1], SOLD_OUT: [0]}}
setup:
  commands: [[SET, "${tag}:stock", "${stock}", PXAT, "${retention_until_ms}"]]
`
	for name, body := range map[string]string{"slow.lua": slow, "lost.yaml": yaml} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A client whose read times out while the script still runs.
	impatient := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testRDB.Options().Addrs, ReadTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = impatient.Close() })
	st := lua.NewStore(impatient, lua.Embedded(), []byte("adapter-system-test"))
	s := NewSystem(mustLoad(t, filepath.Join(dir, "lost.yaml")), st)
	a := lua.NewActivity(fmt.Sprintf("adsys%d", activitySeq.Add(1)), "sku1", 1, 1, time.Hour)
	if err := s.Setup(ctx, a); err != nil {
		t.Fatal(err)
	}
	c, _ := st.NewReserveCall(a, "u1", "r1", time.Minute)
	_, err := s.Reserve(ctx, c)
	if !lua.IsOutcomeUnknown(err) {
		t.Fatalf("a reply lost to the read timeout: %v, want lua.ErrOutcomeUnknown", err)
	}
	time.Sleep(600 * time.Millisecond)
	key := fmt.Sprintf("{lost:%s:0}:runs", a.ID)
	runs, err := testRDB.Get(ctx, key).Int()
	if err != nil || runs != 1 {
		t.Fatalf("the script ran %d times (%v), want once", runs, err)
	}
	testRDB.Del(ctx, key, fmt.Sprintf("{lost:%s:0}:stock", a.ID))
}

// An adapter file's script runs under the run's script watchdog like the
// reference's: a reserve script that loops is stopped by SCRIPT KILL
// (recorded) and its call fails instead of holding the node for the whole
// run.
func TestAdapterScriptUnderTheWatchdog(t *testing.T) {
	clustertest.Need(t)
	dir := t.TempDir()
	loop := "local t = redis.call('TIME')\nlocal until_s = tonumber(t[1]) + 20\nwhile tonumber(redis.call('TIME')[1]) < until_s do end\nreturn 1\n"
	file := "name: loops\nhash_tag: \"loop:${activity}:${bucket}\"\nreserve:\n  script: loop.lua\n  keys: [\"${tag}:count\"]\n  args: [\"${user}\"]\n  reply:\n    outcomes:\n      ACCEPTED: [1]\n      SOLD_OUT: [0]\n    otherwise: ERROR\nsetup:\n  commands:\n    - [SET, \"${tag}:count\", \"${stock}\", PXAT, \"${retention_until_ms}\"]\n"
	for name, body := range map[string]string{"loop.lua": loop, "loops.yaml": file} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := mustLoad(t, filepath.Join(dir, "loops.yaml"))
	st := lua.NewStore(testRDB, lua.Embedded(), []byte("adapter-watchdog-test"))
	w := lua.NewWatchdog(testCluster, 300*time.Millisecond)
	st.SetWatchdog(w)
	s := NewSystem(f, st)
	a := lua.NewActivity(fmt.Sprintf("adsys%d", activitySeq.Add(1)), "sku1", 10, 1, time.Hour)
	if err := s.Setup(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	// The file declares no teardown: the test removes its one key.
	t.Cleanup(func() { testRDB.Del(context.Background(), fmt.Sprintf("{loop:%s:0}:count", a.ID)) })
	c, err := st.NewReserveCall(a, "u1", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = s.Reserve(ctx, c)
	cancel()
	if err == nil {
		t.Fatal("a script that loops for 20 s answered")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := w.EnsureNotBusy(ctx); err != nil {
		t.Fatalf("a master still runs the adapter's script: %v", err)
	}
	// The background sweep's kill is served at busy-reply-threshold: give
	// its record a moment (as lua's watchdog test does).
	kills := w.Kills()
	for deadline := time.Now().Add(3 * time.Second); len(kills) == 0 && time.Now().Before(deadline); kills = w.Kills() {
		time.Sleep(50 * time.Millisecond)
	}
	if len(kills) == 0 || !strings.Contains(kills[0].Reason, "loop.lua") {
		t.Fatalf("kills %+v: want the adapter script's call named as the reason", kills)
	}
}

// validate's "checks that will skip" are those an adapter run reports as
// skipped: not I3 and I4, judged from the answers without records, nor the
// service's, pipeline's or local sold-out flag's checks, which an adapter
// run does not report at all. Before, a file without state.record was
// told I3, I4, S4, S5 and L1 would skip, and cluster-safe "I7 S5".
func TestSkipsAreWhatAnAdapterRunSkips(t *testing.T) {
	ids := func(f *File) string {
		var out []string
		for _, s := range f.Skips() {
			out = append(out, s.ID)
		}
		return strings.Join(out, " ")
	}
	safe, err := Load("../../docs/adapters/cluster-safe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(safe); got != "I7" {
		t.Errorf("cluster-safe: checks that will skip %q, want I7 (the cached request results it does not expose)", got)
	}
	bare := writeAdapter(t, `
reserve:
  script: s.lua
  keys: ["c:{${activity}}"]`+miniReply+`state:
  available: [GET, "c:{${activity}}"]
`, "return 1\n")
	for _, id := range strings.Fields(ids(bare)) {
		switch id {
		case "I3", "I4", "S4", "S5", "L1":
			t.Errorf("a file without state.record: %s listed as skipping (%s), but an adapter run judges it from the answers or does not report it", id, ids(bare))
		}
	}
}
