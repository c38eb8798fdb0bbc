package faults

// latency: toxiproxy latency toxic on the target's proxy; every chunk in the
// chosen stream is delayed by latency ± jitter ms. Evidence at run level is
// the service-time shift of the target's slots in the window.

const kindLatency = "latency"

var (
	latencyDelay  = intParam("latency", 100, 0, 600_000, "milliseconds", "added delay in milliseconds")
	latencyJitter = intParam("jitter", 0, 0, 600_000, "milliseconds", "± random spread in milliseconds")
)

var latencyKind = Spec{
	Kind:   kindLatency,
	Help:   "delay traffic through the target node's proxy by latency ± jitter ms",
	Params: streamToxicParams(latencyDelay.Param, latencyJitter.Param),
	Build:  newLatency,
	Rules:  toxicRules(),
}

func newLatency(v Values) (Fault, error) {
	lat, jit := latencyDelay.Of(v), latencyJitter.Of(v)
	return streamToxicFault(v, kindLatency, "latency", map[string]any{"latency": lat, "jitter": jit},
		map[string]any{"latency_ms": lat, "jitter_ms": jit}), nil
}
