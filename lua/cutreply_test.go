package lua

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"seckill-harness/internal/clustertest"
)

// cutRelay is a TCP relay in front of one Redis node. Armed, it lets the
// next script command through to Redis and then loses its reply: "reset"
// closes the client side with an RST, "hold" swallows the reply and keeps
// the connection open (the client times out). It counts script commands
// that reached Redis through it.
type cutRelay struct {
	ln       net.Listener
	upstream string
	mode     atomic.Value // "", "reset", "hold"
	scripts  atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newCutRelay(t *testing.T, upstream string) *cutRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &cutRelay{ln: ln, upstream: upstream}
	r.mode.Store("")
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *cutRelay) arm(mode string) { r.mode.Store(mode) }

func (r *cutRelay) close() {
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *cutRelay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", r.upstream)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, s)
		r.mu.Unlock()
		var scriptSent atomic.Bool
		r.wg.Add(2)
		go func() { // client -> redis
			defer r.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					low := bytes.ToLower(buf[:n])
					k := bytes.Count(low, []byte("\r\nevalsha\r\n")) + bytes.Count(low, []byte("\r\neval\r\n"))
					if k > 0 {
						r.scripts.Add(int64(k))
						scriptSent.Store(true)
					}
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					s.Close()
					return
				}
			}
		}()
		go func() { // redis -> client
			defer r.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && r.mode.Load().(string) == "handshake" && !scriptSent.Load() {
					// Every new connection loses its first reply: the handshake.
					c.(*net.TCPConn).SetLinger(0)
					c.Close()
					s.Close()
					return
				}
				if n > 0 {
					mode := r.mode.Load().(string)
					if mode != "" && scriptSent.Load() && r.mode.CompareAndSwap(mode, "") {
						if mode == "reset" {
							c.(*net.TCPConn).SetLinger(0)
							c.Close()
							s.Close()
							return
						}
						continue // hold: the reply is dropped, the connection stays
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					if !errors.Is(err, io.EOF) {
						c.Close()
					}
					c.Close()
					return
				}
			}
		}()
	}
}

// relayedClient routes every connection to the activity's master through relay.
func relayedClient(t *testing.T, a *Activity, hardened bool, readTimeout time.Duration) (*redis.ClusterClient, *cutRelay) {
	t.Helper()
	ctx := context.Background()
	slot, err := testRDB.ClusterKeySlot(ctx, a.Scope(0).StockKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	master, err := testCluster.MasterOfSlot(ctx, int(slot))
	if err != nil {
		t.Fatal(err)
	}
	relay := newCutRelay(t, master.Addr)
	var d net.Dialer
	opt := &redis.ClusterOptions{
		Addrs:       testCluster.Addrs(),
		ReadTimeout: readTimeout,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == master.Addr {
				addr = relay.ln.Addr().String()
			}
			return d.DialContext(ctx, network, addr)
		},
	}
	var c *redis.ClusterClient
	if hardened {
		c = NewClusterClient(opt)
	} else {
		c = redis.NewClusterClient(opt)
	}
	t.Cleanup(func() { c.Close() })
	return c, relay
}

func TestLostReplyIsOutcomeUnknownAndRunsOnce(t *testing.T) {
	clustertest.Need(t)
	for _, mode := range []string{"reset", "hold"} {
		t.Run(mode, func(t *testing.T) {
			a := newActivity(t, 10, 1)
			rdb, relay := relayedClient(t, a, true, 300*time.Millisecond)
			store := NewStore(rdb, Embedded(), testSecret)
			ctx := context.Background()
			warm, _ := store.NewReserveCall(a, "warm", "warm", time.Minute)
			if res, err := store.Reserve(ctx, warm); err != nil || res.Code != Accepted {
				t.Fatalf("warm-up: %+v %v", res, err)
			}
			relay.scripts.Store(0)
			call, _ := store.NewReserveCall(a, "u1", "r1", time.Minute)
			relay.arm(mode)
			res, err := store.Reserve(ctx, call)
			if !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("lost reply gave %+v, %v; want ErrOutcomeUnknown", res, err)
			}
			var ue *OutcomeUnknownError
			if !errors.As(err, &ue) || ue.Cause() == nil {
				t.Fatalf("error %T lacks its cause", err)
			}
			if res.Code != 0 || res.ReservationID != "" {
				t.Fatalf("an unknown outcome carried a business answer: %+v", res)
			}
			if res.Attempts != 1 || relay.scripts.Load() != 1 {
				t.Fatalf("client counted %d attempts, relay saw %d scripts: want exactly 1 (no silent re-send)", res.Attempts, relay.scripts.Load())
			}
			// The script ran: the request result is there and one unit moved.
			lr, found, err := testStore.LookupRequest(ctx, call.Scope, "r1")
			if err != nil || !found || lr.Code != Accepted || lr.ReservationID != call.ReservationID {
				t.Fatalf("request result after the lost reply: %+v found=%v %v", lr, found, err)
			}
			if s := stockOf(t, a, 0); s.Reserved != 2 {
				t.Fatalf("stock %+v: want reserved 2 (warm-up + the lost one)", s)
			}
			// The harness's retry: the same ids replay, no second decrement.
			again, sends, err := store.ReserveRetry(ctx, call, RetryPolicy{MaxSends: 3})
			if err != nil || sends != 1 || again.Code != Accepted || !again.Replay || again.ReservationID != call.ReservationID {
				t.Fatalf("retry: %+v sends=%d %v", again, sends, err)
			}
			if s := stockOf(t, a, 0); s.Reserved != 2 {
				t.Fatalf("retry moved stock again: %+v", s)
			}
		})
	}
}

// The negative control: plain go-redis re-sends a script whose reply was cut.
// This is why the hook exists; if go-redis ever stops doing it, this test says so.
func TestPlainGoRedisResendsSilently(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	rdb, relay := relayedClient(t, a, false, 300*time.Millisecond)
	store := NewStore(rdb, Embedded(), testSecret)
	ctx := context.Background()
	warm, _ := store.NewReserveCall(a, "warm", "warm", time.Minute)
	if _, err := store.Reserve(ctx, warm); err != nil {
		t.Fatal(err)
	}
	relay.scripts.Store(0)
	call, _ := store.NewReserveCall(a, "u1", "r1", time.Minute)
	relay.arm("reset")
	res, err := store.Reserve(ctx, call)
	if err != nil {
		t.Fatalf("plain go-redis surfaced the cut (%v): the re-send this test documents did not happen", err)
	}
	if relay.scripts.Load() < 2 || !res.Replay {
		t.Fatalf("relay saw %d scripts, replay=%v: want a silent re-send answered from the cache", relay.scripts.Load(), res.Replay)
	}
	t.Logf("plain go-redis: one call, %d script commands on the wire, answer replay=%v", relay.scripts.Load(), res.Replay)
}

// A connection whose handshake reply is cut never carried the script: the
// call fails without ErrOutcomeUnknown (go-redis may dial again: nothing ran)
// and no script reached Redis.
func TestCutHandshakeIsNotAnUnknownOutcome(t *testing.T) {
	clustertest.Need(t)
	a := newActivity(t, 10, 1)
	rdb, relay := relayedClient(t, a, true, 300*time.Millisecond)
	store := NewStore(rdb, Embedded(), testSecret)
	ctx := context.Background()
	relay.arm("handshake")
	call, _ := store.NewReserveCall(a, "u1", "r1", time.Minute)
	res, err := store.Reserve(ctx, call)
	if err == nil || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("cut handshakes gave %+v, %v: want a plain (never sent) error", res, err)
	}
	if res.Attempts != 0 || relay.scripts.Load() != 0 {
		t.Fatalf("client counted %d attempts, relay saw %d scripts: want 0", res.Attempts, relay.scripts.Load())
	}
	if !Retryable(err) {
		t.Fatalf("a never-sent call must be retryable: %v", err)
	}
	if _, found, _ := testStore.LookupRequest(ctx, call.Scope, "r1"); found {
		t.Fatal("the request ran")
	}
	relay.arm("")
	if res, err := store.Reserve(ctx, call); err != nil || res.Code != Accepted || res.Replay {
		t.Fatalf("after the cut: %+v %v", res, err)
	}
}
