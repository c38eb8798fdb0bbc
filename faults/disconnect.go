package faults

import (
	"fmt"
	"maps"
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

var (
	disconnectToxic = enumParam("toxic", "reset_peer", "reset_peer (close at the first reply byte, timeout 0) | limit_data (bytes 0: close with FIN) | timeout (timeout 0: hold the reply, client times out)",
		"reset_peer", "limit_data", "timeout")
	disconnectEvery = durationParam("every", 0, "0: armed from inject to heal; a duration (e.g. 500ms): re-arm at this period so re-dialled connections get cut too (pulsing stops at heal or when the inject context ends)")
	disconnectPulse = durationParam("pulse", 50*time.Millisecond, "with every>0: how long each arming lasts (< every)")
)

var disconnectKind = Spec{
	Kind:   kindDisconnect,
	Help:   "cut replies on the target node's proxy (downstream toxic): the script runs, the client sees UNKNOWN; arm it under load (warm pool)",
	Params: []Param{TargetParam, disconnectToxic.Param, toxicityParam.Param, disconnectEvery.Param, disconnectPulse.Param},
	Build:  newDisconnect,
	Rules:  toxicRules(),
}

// disconnectAttrs are the attributes that make each toxic cut the reply.
var disconnectAttrs = map[string]map[string]any{
	"reset_peer": {"timeout": 0},
	"limit_data": {"bytes": 0},
	"timeout":    {"timeout": 0},
}

func newDisconnect(v Values) (Fault, error) {
	toxic, every, pulse := disconnectToxic.Of(v), disconnectEvery.Of(v), disconnectPulse.Of(v)
	if every > 0 && (pulse <= 0 || pulse >= every) {
		return nil, fmt.Errorf("pulse=%s: want 0 < pulse < every (%s)", pulse, every)
	}
	f := newToxicFault(kindDisconnect, v.Target(), compose.Toxic{
		Type: toxic, Stream: "downstream", Toxicity: toxicityParam.Of(v), Attributes: maps.Clone(disconnectAttrs[toxic]),
	}, nil)
	f.every, f.pulse = every, pulse
	f.notes = []string{
		"downstream toxic: requests reach Redis and run; replies are lost (UNKNOWN, executed)",
		"at most one cut reply per connection open at arming; new connections fail their handshake while armed (UNKNOWN, not executed)",
	}
	return f, nil
}
