package faults

// latency: toxiproxy latency toxic on the target's proxy; every chunk in the
// chosen stream is delayed by latency ± jitter ms. Evidence at run level is
// the service-time shift of the target's slots in the window.

const kindLatency = "latency"

func init() {
	Register(Spec{
		Kind: kindLatency,
		Help: "delay traffic through the target node's proxy by latency ± jitter ms",
		Params: []Param{
			TargetParam,
			{Name: "latency", Default: "100", Help: "added delay in milliseconds"},
			{Name: "jitter", Default: "0", Help: "± random spread in milliseconds"},
			streamDoc,
			toxicityDoc,
		},
		New:   newLatency,
		Rules: toxicRules(),
	})
}

func newLatency(params map[string]string) (Fault, error) {
	params, st, err := parseStreamToxic(params, "latency", "jitter")
	if err != nil {
		return nil, err
	}
	lat, err := intParam(params, "latency", 100, 0, 600_000, "milliseconds")
	if err != nil {
		return nil, err
	}
	jit, err := intParam(params, "jitter", 0, 0, 600_000, "milliseconds")
	if err != nil {
		return nil, err
	}
	return st.fault(kindLatency, "latency", map[string]any{"latency": lat, "jitter": jit},
		map[string]any{"latency_ms": lat, "jitter_ms": jit}), nil
}
