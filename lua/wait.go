package lua

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// WaitRequest asks that a reserve.lua call answered ACCEPTED be followed by
// `WAIT replicas timeout` on the very connection that ran the script.
// Redis counts, for WAIT, only the writes of the connection it is sent on
// (the replication offset after that connection's last write), so a WAIT
// on any other connection says nothing about the reservation. Attach it
// with WithWait to the context of one reserve call made through a client
// of this package (NewClusterClient, NewClient or a client passed through
// Harden): the hook those clients carry pins one connection of the node
// that serves the call, runs the script on it (EVALSHA, the EVAL
// fallback, MOVED and ASK followed as usual, each attempt on a pinned
// connection of the node it goes to) and, only when the answer is
// ACCEPTED (not a replay: see freshlyAccepted), sends WAIT on the same
// connection before releasing it. WAIT runs on its own deadline (Timeout
// plus a second), not the call's: a call cancelled during WAIT still
// waits that long at most.
//
// WAIT is not a guarantee: a replica that confirmed may still lose the
// write (it restarts empty, or another replica is promoted); a WAIT that
// timed out says the write may be lost, not that it is. A request is used
// by one call on one goroutine.
type WaitRequest struct {
	Replicas int           // replicas that must acknowledge (WAIT's numreplicas, at least 1)
	Timeout  time.Duration // WAIT's timeout (positive: WAIT 0 would block forever)

	outcome WaitOutcome
	// scriptAnswered is called once the script's reply is in, before WAIT
	// is sent (the store stops the script watchdog's clock there: WAIT's
	// time is not the script's).
	scriptAnswered func()
}

// WaitOutcome is what WAIT said after one ACCEPTED answer.
type WaitOutcome struct {
	// Sent: the script answered ACCEPTED on a pinned connection and WAIT
	// was sent on it. False for any other answer, and for an ACCEPTED that
	// arrived on a path the hook does not pin (none today).
	Sent bool
	// Acked is WAIT's reply: the replicas that acknowledged every write of
	// the connection up to and including the script's.
	Acked int64
	// Latency is WAIT's round trip (it is also inside the call's own
	// latency: a user of the path waits for it).
	Latency time.Duration
	// Err is WAIT's error (a lost connection, a timeout of the client's
	// read); the reservation is then not confirmed.
	Err error
	// Confirmed: WAIT answered at least the requested replicas.
	Confirmed bool
}

// Outcome is what the last script attempt of the call led to.
func (r *WaitRequest) Outcome() WaitOutcome { return r.outcome }

type waitKey struct{}

// WithWait returns ctx carrying req for the reserve call made with it.
func WithWait(ctx context.Context, req *WaitRequest) context.Context {
	return context.WithValue(ctx, waitKey{}, req)
}

func waitRequestFrom(ctx context.Context) *WaitRequest {
	r, _ := ctx.Value(waitKey{}).(*WaitRequest)
	return r
}

// waitSlack is how much longer than WAIT's own timeout the client waits
// for its reply (the server answers at the timeout; a reply later than
// this is a lost connection).
const waitSlack = time.Second

// waitHook sits on a node client, outside the no-re-send hook, and carries
// out a WaitRequest (see there). Commands of a context without one pass
// untouched.
type waitHook struct{ node *redis.Client }

func (waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		req := waitRequestFrom(ctx)
		if req == nil || !isScriptCmd(cmd) {
			return next(ctx, cmd)
		}
		conn := h.node.Conn()
		defer conn.Close()
		err := conn.Process(pinned(ctx), cmd) // the Conn's own hooks: the no-re-send hook counts and classifies
		req.after(ctx, conn, cmd)
		return err
	}
}

// ProcessPipelineHook handles the one pipeline a script call makes: ASKING
// and the script, after an ASK redirect.
func (h waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		req := waitRequestFrom(ctx)
		if req == nil || len(cmds) != 2 || cmds[0].Name() != "asking" || !isScriptCmd(cmds[1]) {
			return next(ctx, cmds)
		}
		conn := h.node.Conn()
		defer conn.Close()
		pctx := pinned(ctx)
		pipe := conn.Pipeline()
		for _, c := range cmds {
			_ = pipe.Process(pctx, c)
		}
		_, err := pipe.Exec(pctx)
		req.after(ctx, conn, cmds[1])
		return err
	}
}

// pinned marks ctx as already on a pinned connection: the hook of that
// connection lets the command through.
func pinned(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitKey{}, (*WaitRequest)(nil))
}

// after records one script attempt: WAIT on conn when it answered ACCEPTED.
func (r *WaitRequest) after(ctx context.Context, conn *redis.Conn, script redis.Cmder) {
	r.outcome = WaitOutcome{}
	if script.Err() != nil || !freshlyAccepted(script) {
		return
	}
	if r.scriptAnswered != nil {
		r.scriptAnswered()
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Timeout+waitSlack)
	defer cancel()
	t0 := time.Now()
	n, err := conn.Wait(wctx, r.Replicas, r.Timeout).Result()
	r.outcome = WaitOutcome{Sent: true, Acked: n, Latency: time.Since(t0), Err: err,
		Confirmed: err == nil && r.Replicas > 0 && n >= int64(r.Replicas)}
}

// freshlyAccepted reports whether cmd's reply is reserve.lua's ACCEPTED
// tuple {0, reservation_id, remaining, status, replay} with replay 0. A
// replayed ACCEPTED gets no WAIT: Redis moves a connection's WAIT offset
// only with the writes of that connection, and a replay's reservation was
// written by an earlier call, maybe on another connection, so a WAIT there
// could confirm offsets that do not hold it.
func freshlyAccepted(cmd redis.Cmder) bool {
	c, ok := cmd.(*redis.Cmd)
	if !ok {
		return false
	}
	vals, ok := c.Val().([]any)
	if !ok || len(vals) != 5 {
		return false
	}
	code, err1 := asInt64(vals[0])
	replay, err2 := asInt64(vals[4])
	return err1 == nil && err2 == nil && ReserveCode(code) == Accepted && replay == 0
}
