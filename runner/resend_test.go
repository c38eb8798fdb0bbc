package runner

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/history"
	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
)

// replyCutter loses the reply of the next call of one script on the
// connections it wraps: the call reaches the real Redis and runs there, the
// reply is read off the socket and thrown away, and the connection is
// closed, as when a node's link drops between the script and its answer.
type replyCutter struct {
	sha   []byte      // the script whose reply is cut (its SHA1, hex)
	armed atomic.Bool // cut the next reply of sha
	cut   atomic.Int64
}

type cutConn struct {
	net.Conn
	c       *replyCutter
	pending bool // a call of c.sha was written while armed
}

func (w *cutConn) Write(p []byte) (int, error) {
	if w.c.armed.Load() && bytes.Contains(bytes.ToLower(p), w.c.sha) && w.c.armed.CompareAndSwap(true, false) {
		w.pending = true
	}
	return w.Conn.Write(p)
}

func (w *cutConn) Read(p []byte) (int, error) {
	if !w.pending {
		return w.Conn.Read(p)
	}
	n, err := w.Conn.Read(p)
	if err != nil {
		w.pending = false
		return n, err
	}
	if n > 0 && p[0] == '-' { // NOSCRIPT: the script did not run; the EVAL that follows will
		return n, nil
	}
	w.pending = false // the script ran: its reply arrived
	w.c.cut.Add(1)
	_ = w.Conn.Close()
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by the test's reply cutter")}
}

// cutTarget is a target on its own hardened client whose every connection
// goes through a replyCutter for script (same secret as testStore, so the
// ids are the ones testStore derives).
func cutTarget(t *testing.T, stock int64, script *lua.Script) (Target, *replyCutter) {
	t.Helper()
	base := newTarget(t, stock, 1)
	cutter := &replyCutter{sha: []byte(script.SHA1)}
	var d net.Dialer
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: testCluster.Addrs(), ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cutConn{Conn: c, c: cutter}, nil
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	base.Store = lua.NewStore(rdb, lua.Embedded(), []byte("runner-test"))
	return base, cutter
}

// A release whose executing send lost its reply and whose same-id re-send
// answered ALREADY_RELEASED did release the reservation: the user may
// reserve again, and I4 must not call the next ACCEPTED a second live
// reservation. The same release sent only after the second ACCEPTED (the
// user's marker deleted behind the script's back) is still a violation.
func TestI4CountsAReleaseWhoseReplyWasLost(t *testing.T) {
	clustertest.Need(t)
	for _, tc := range []struct {
		name          string
		reserveFirst  bool // the user reserves again before the release is sent
		wantViolation bool
	}{{"released, then reserved again", false, false}, {"reserved again while the first was live", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, cutter := cutTarget(t, 5, lua.Embedded().Compensate)
			s := &scripted{t: t, tgt: tgt, e: &engine{cfg: smallConfig(), sale: tgt.Sale(), sys: tgt.System(), began: time.Now()}}
			first := s.do(history.KindFresh, 7, 1)
			again := func() {
				if tc.reserveFirst { // the bug: the one-per-user marker vanishes
					testRDB.Del(context.Background(), s.scope(7).UserKey(history.UserID(7)))
				}
				if op := s.do(history.KindSameUser, 7, 2); !op.Accepted() || op.RID == first.RID {
					t.Fatalf("setup: the user reserving again got %s (%s)", op.OutcomeName(), op.RID)
				}
			}
			if tc.reserveFirst {
				again()
			}
			cutter.armed.Store(true)
			rel := s.do(history.KindRelease, 7, 1)
			if cutter.cut.Load() != 1 || !rel.HadUnknown() || rel.Sends < 2 || rel.Outcome != history.Outcome(lua.CompensateAlreadyReleased) {
				t.Fatalf("setup: cut %d replies; release %s after %d sends (had unknown %v); want one cut, then ALREADY_RELEASED on a re-send",
					cutter.cut.Load(), rel.OutcomeName(), rel.Sends, rel.HadUnknown())
			}
			if !tc.reserveFirst {
				again()
			}
			c := checkByID(t, s.verify(), "I4")
			if got := c.Status == StatusFail; got != tc.wantViolation {
				t.Fatalf("I4 %s (%s); want a violation: %v", c.Status, c.Detail, tc.wantViolation)
			}
		})
	}
}

// A bucket that answered SOLD_OUT and then got a unit back from a release
// whose reply was lost (the re-send answered ALREADY_RELEASED) did not
// refuse while holding stock: I9 must place that release at its re-send's
// answer, not ignore it. A SOLD_OUT answered after that release while the
// unit is still there is an undersell.
func TestI9CountsAReleaseWhoseReplyWasLost(t *testing.T) {
	clustertest.Need(t)
	for _, tc := range []struct {
		name          string
		soldOutAfter  bool // a SOLD_OUT is answered after the release, with the unit back
		wantViolation bool
	}{{"sold out, then a unit released", false, false}, {"refused after the release", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, cutter := cutTarget(t, 1, lua.Embedded().Compensate)
			s := &scripted{t: t, tgt: tgt, e: &engine{cfg: smallConfig(), sale: tgt.Sale(), sys: tgt.System(), began: time.Now()}}
			s.do(history.KindFresh, 1, 1)
			if op := s.do(history.KindFresh, 2, 2); op.Outcome != history.Outcome(lua.SoldOut) {
				t.Fatalf("setup: the second user got %s, want SOLD_OUT", op.OutcomeName())
			}
			cutter.armed.Store(true)
			if rel := s.do(history.KindRelease, 1, 1); cutter.cut.Load() != 1 || !rel.HadUnknown() || rel.Outcome != history.Outcome(lua.CompensateAlreadyReleased) {
				t.Fatalf("setup: cut %d replies, release %s", cutter.cut.Load(), rel.OutcomeName())
			}
			if tc.soldOutAfter { // the bug: the bucket refuses while it holds the unit
				ctx, sk := context.Background(), s.scope(3).StockKey()
				testRDB.HIncrBy(ctx, sk, "available", -1)
				testRDB.HIncrBy(ctx, sk, "initial", -1)
				if op := s.do(history.KindFresh, 3, 3); op.Outcome != history.Outcome(lua.SoldOut) {
					t.Fatalf("setup: got %s, want SOLD_OUT", op.OutcomeName())
				}
				testRDB.HIncrBy(ctx, sk, "available", 1)
				testRDB.HIncrBy(ctx, sk, "initial", 1)
			}
			c := checkByID(t, s.verify(), "I9")
			if got := c.Status == StatusFail; got != tc.wantViolation {
				t.Fatalf("I9 %s (%s); want a violation: %v", c.Status, c.Detail, tc.wantViolation)
			}
		})
	}
}
