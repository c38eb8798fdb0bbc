package faults

import (
	"fmt"
	"strings"
	"time"

	"seckill-harness/compose"
)

// disconnect-before-reply: a DOWNSTREAM toxic on the target's proxy, so the
// request reaches Redis and the script runs, but its reply is lost. The
// client sees EOF / a reset / an i/o timeout: OUTCOME UNKNOWN with the
// request executed. The run-level evidence (UNKNOWNs whose request result
// exists in Redis; same-id retries that replay with no second decrement) is
// computed from the history.
//
// Arming. The toxic acts on each connection's first reply chunk after it is
// armed, so it cuts at most one reply per open connection, and only
// connections that already exist (a warm pool) get to carry a request that
// runs: while it is armed, every NEW connection loses the reply to its
// handshake (HELLO), so go-redis fails the command before it is written
// (for a hardened client an UNKNOWN that did not execute). Hence:
//   - inject while the load runs (connections exist), not before it;
//   - armed continuously (every=0), the fault yields at most one executed
//     UNKNOWN per warm connection, then behaves like a partition of the
//     node's slots until healed;
//   - with every=<period>, the toxic is armed for pulse at the start of each
//     period and removed in between, so go-redis re-dials and the pool warms
//     up again: executed UNKNOWNs are spread over the whole window.
// reset_peer sends a real RST only on connections accepted after it was
// added (toxiproxy sets SO_LINGER 0 when a link starts); warm connections
// get a FIN (EOF). limit_data (bytes 0) closes with a FIN. timeout (0) holds
// the reply forever: the client gets an i/o timeout after its ReadTimeout;
// removing the toxic closes those connections.

const kindDisconnect = "disconnect-before-reply"

func init() {
	Register(Spec{
		Kind: kindDisconnect,
		Help: "cut replies on the target node's proxy (downstream toxic): the script runs, the client sees UNKNOWN; arm it under load (warm pool)",
		Params: []Param{
			TargetParam,
			{Name: "toxic", Default: "reset_peer", Help: "reset_peer (close at the first reply byte, timeout 0) | limit_data (bytes 0: close with FIN) | timeout (timeout 0: hold the reply, client times out)",
				Values: []string{"reset_peer", "limit_data", "timeout"}},
			toxicityDoc,
			{Name: "every", Default: "0", Help: "0: armed from inject to heal; a duration (e.g. 500ms): re-arm at this period so re-dialled connections get cut too (pulsing stops at heal or when the inject context ends)"},
			{Name: "pulse", Default: "50ms", Help: "with every>0: how long each arming lasts (< every)"},
		},
		New:   newDisconnect,
		Rules: toxicRules(),
	})
}

func newDisconnect(params map[string]string) (Fault, error) {
	params = copyParams(params)
	target, err := ParseTarget(params)
	if err != nil {
		return nil, err
	}
	if err := CheckParams(params, "toxic", "toxicity", "every", "pulse"); err != nil {
		return nil, err
	}
	kind := strings.TrimSpace(params["toxic"])
	var attrs map[string]any
	switch kind {
	case "", "reset_peer":
		kind, attrs = "reset_peer", map[string]any{"timeout": 0}
	case "limit_data":
		attrs = map[string]any{"bytes": 0}
	case "timeout":
		attrs = map[string]any{"timeout": 0}
	default:
		return nil, fmt.Errorf("toxic=%q: want reset_peer, limit_data or timeout", params["toxic"])
	}
	tox, err := toxicityParam(params)
	if err != nil {
		return nil, err
	}
	every, err := durationParam(params, "every", 0)
	if err != nil {
		return nil, err
	}
	pulse, err := durationParam(params, "pulse", 50*time.Millisecond)
	if err != nil {
		return nil, err
	}
	if every > 0 && (pulse <= 0 || pulse >= every) {
		return nil, fmt.Errorf("pulse=%s: want 0 < pulse < every (%s)", pulse, every)
	}
	f := newToxicFault(kindDisconnect, target, compose.Toxic{
		Type: kind, Stream: "downstream", Toxicity: tox, Attributes: attrs,
	}, nil)
	f.every, f.pulse = every, pulse
	f.notes = []string{
		"downstream toxic: requests reach Redis and run; replies are lost (UNKNOWN, executed)",
		"at most one cut reply per connection open at arming; new connections fail their handshake while armed (UNKNOWN, not executed)",
	}
	return f, nil
}
