package lua

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// ErrOutcomeUnknown is matched (errors.Is) by every error whose script call
// may or may not have run: the request may have reached Redis, the reply did
// not reach us. The only safe follow-ups are a re-send with the same
// request_id / reservation_id / message_id, or a lookup of the request result.
var ErrOutcomeUnknown = errors.New("outcome unknown: the reply was lost and the script may have run")

// OutcomeUnknownError is the error of a script call whose reply was lost
// (EOF, connection reset, i/o timeout, context deadline after the write).
//
// It deliberately has no Unwrap: go-redis decides whether to re-send by
// unwrapping to io.EOF or a net.Error, and a script whose reply was lost must
// not be re-sent behind the caller's back. Use Cause for the wire error.
type OutcomeUnknownError struct {
	Cmd   string // evalsha or eval
	Addr  string // node address the call went to (as go-redis knows it)
	cause error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("outcome unknown: %s to %s lost its reply: %v", e.Cmd, e.Addr, e.cause)
}

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Cause is the wire error that lost the reply.
func (e *OutcomeUnknownError) Cause() error { return e.cause }

// IsOutcomeUnknown reports whether err leaves the outcome of a call unknown.
func IsOutcomeUnknown(err error) bool { return errors.Is(err, ErrOutcomeUnknown) }

// WireStats counts what one logical call did on the wire. Attach it with
// WithWireStats; the hook installed by Harden fills it. Safe for concurrent use.
type WireStats struct {
	Attempts    atomic.Int32 // script commands written to a connection (EVALSHA and EVAL both count)
	NoScript    atomic.Int32 // NOSCRIPT answers
	Moved       atomic.Int32 // MOVED answers (go-redis followed them)
	Ask         atomic.Int32 // ASK answers
	TryAgain    atomic.Int32 // TRYAGAIN answers (multi-key call during slot migration)
	ClusterDown atomic.Int32 // CLUSTERDOWN answers
}

type wireStatsKey struct{}

// WithWireStats returns ctx carrying ws for the script calls made with it.
func WithWireStats(ctx context.Context, ws *WireStats) context.Context {
	return context.WithValue(ctx, wireStatsKey{}, ws)
}

// WireStatsFrom returns the WireStats attached to ctx, or nil.
func WireStatsFrom(ctx context.Context) *WireStats {
	ws, _ := ctx.Value(wireStatsKey{}).(*WireStats)
	return ws
}

// NewClusterClient makes a cluster client that never re-sends a script whose
// reply was lost (see Harden). opt is copied; MaxRetries is forced to -1 (no
// per-node retry loop), Protocol defaults to RESP2, DisableRoutingPolicies is
// forced on, everything else is kept, including Dialer and MaxRedirects
// (MOVED/ASK/TRYAGAIN and dial errors are still followed: the script did not
// run there).
//
// Routing policies: every command the harness sends through a cluster
// client is keyed (scripts, GET/SET on the activity's keys) or goes to
// each node explicitly (ForEachMaster, ForEachShard, per-node admin
// clients), so go-redis's request/response policy table (fan a keyless
// command out, aggregate the replies) has nothing to do here — but it
// looks every command up in it, building two 5 s contexts per call when
// ContextTimeoutEnabled is on: about 5 allocations and a few µs per
// reserve (BenchmarkComponentEvalShaNoRouting against
// BenchmarkComponentEvalShaTimeouts). Keyed commands route by slot either
// way; a keyless one goes to one node, as before the policies existed.
func NewClusterClient(opt *redis.ClusterOptions) *redis.ClusterClient {
	o := *opt
	o.MaxRetries = -1
	o.DisableRoutingPolicies = true
	if o.Protocol == 0 {
		o.Protocol = 2 // RESP2: the scripts need no push notifications, and each call skips their check
	}
	c := redis.NewClusterClient(&o)
	if err := Harden(c); err != nil {
		panic(err) // MaxRetries was just set: unreachable
	}
	return c
}

// NewClient is NewClusterClient for a single node (benchmarks against one master).
func NewClient(opt *redis.Options) *redis.Client {
	o := *opt
	o.MaxRetries = -1
	if o.Protocol == 0 {
		o.Protocol = 2
	}
	c := redis.NewClient(&o)
	c.AddHook(waitHook{node: c}) // first: outside the no-re-send hook (see WaitRequest)
	c.AddHook(noResendHook{addr: o.Addr})
	return c
}

// Harden installs the no-re-send hook on every node client of c, present and
// future, and the hook that carries out a WaitRequest (inert without one). It must be called before c sends its first command, and c must have
// no per-node retries (MaxRetries <= 0), since those would re-send inside the
// hook; it returns an error otherwise.
func Harden(c *redis.ClusterClient) error {
	if n := c.Options().MaxRetries; n > 0 {
		return fmt.Errorf("cluster client has MaxRetries=%d: per-node retries would re-send scripts whose reply was lost; use MaxRetries: -1", n)
	}
	c.OnNewNode(func(node *redis.Client) {
		// The WAIT hook first: it is the outer one, and the pinned
		// connection it runs a script on carries the no-re-send hook itself.
		node.AddHook(waitHook{node: node})
		node.AddHook(noResendHook{addr: node.Options().Addr})
	})
	return nil
}

// noResendHook sits on a node client, so it sees each attempt that the
// cluster client's redirect/retry loop makes. For a script command it counts
// the attempt and turns a lost reply into *OutcomeUnknownError, which the loop
// does not retry. Other commands pass untouched.
type noResendHook struct{ addr string }

func (noResendHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h noResendHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isScriptCmd(cmd) {
			return next(ctx, cmd)
		}
		probe, before := probeOf(cmd)
		err := next(ctx, cmd)
		if err != nil && probe != nil && probe.n.Load() == before {
			// The command was never written into a connection (dial or
			// handshake failed): nothing ran, go-redis may try again.
			return err
		}
		if out := h.after(ctx, cmd, err); out != err {
			cmd.SetErr(out)
			return out
		}
		return err
	}
}

func (h noResendHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	// go-redis sends ASKING + the command as a two-command pipeline after ASK.
	return func(ctx context.Context, cmds []redis.Cmder) error {
		before := make([]int32, len(cmds))
		for i, cmd := range cmds {
			_, before[i] = probeOf(cmd)
		}
		err := next(ctx, cmds)
		var firstUnknown error
		for i, cmd := range cmds {
			if !isScriptCmd(cmd) {
				continue
			}
			cerr := cmd.Err()
			if cerr == nil && err != nil && !isRedisError(err) {
				cerr = err
			}
			if probe, _ := probeOf(cmd); cerr != nil && probe != nil && probe.n.Load() == before[i] {
				continue // never written
			}
			if out := h.after(ctx, cmd, cerr); out != cerr {
				cmd.SetErr(out)
				if firstUnknown == nil {
					firstUnknown = out
				}
			}
		}
		if firstUnknown != nil {
			return firstUnknown
		}
		return err
	}
}

// after records one attempt and classifies its error.
func (h noResendHook) after(ctx context.Context, cmd redis.Cmder, err error) error {
	ws := WireStatsFrom(ctx)
	if err != nil && neverSent(err) {
		return err // never reached a socket: safe for go-redis to try again
	}
	if ws != nil {
		ws.Attempts.Add(1)
	}
	if err == nil {
		return nil
	}
	if isRedisError(err) {
		if ws != nil {
			switch msg := err.Error(); {
			case strings.HasPrefix(msg, "NOSCRIPT"):
				ws.NoScript.Add(1)
			case strings.HasPrefix(msg, "MOVED"):
				ws.Moved.Add(1)
			case strings.HasPrefix(msg, "ASK"):
				ws.Ask.Add(1)
			case strings.HasPrefix(msg, "TRYAGAIN"):
				ws.TryAgain.Add(1)
			case strings.HasPrefix(msg, "CLUSTERDOWN"):
				ws.ClusterDown.Add(1)
			}
		}
		return err // Redis answered: the outcome is known
	}
	var already *OutcomeUnknownError
	if errors.As(err, &already) {
		return err
	}
	return &OutcomeUnknownError{Cmd: cmd.Name(), Addr: h.addr, cause: err}
}

// writeProbe is a script argument that marshals to its string and counts
// how often go-redis wrote it into a connection buffer: a failed call whose
// probe count did not move was never sent.
type writeProbe struct {
	s string
	n atomic.Int32
}

// MarshalBinary is called by go-redis as it writes the command. The bytes
// are the string's own (go-redis only copies them into its buffer).
func (w *writeProbe) MarshalBinary() ([]byte, error) {
	w.n.Add(1)
	return unsafe.Slice(unsafe.StringData(w.s), len(w.s)), nil
}

func (w *writeProbe) String() string { return w.s }

// probeOf finds the write probe among a command's arguments.
func probeOf(cmd redis.Cmder) (*writeProbe, int32) {
	for _, a := range cmd.Args() {
		if p, ok := a.(*writeProbe); ok {
			return p, p.n.Load()
		}
	}
	return nil, 0
}

func isScriptCmd(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// neverSent reports errors raised before the command reached a connection:
// a failed dial, a pool timeout, a closed client.
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}
