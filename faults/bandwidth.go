package faults

// bandwidth: toxiproxy bandwidth toxic on the target's proxy, limiting the
// chosen stream to rate KB/s per connection.

const kindBandwidth = "bandwidth"

func init() {
	Register(Spec{
		Kind: kindBandwidth,
		Help: "limit traffic through the target node's proxy to rate KB/s per connection",
		Params: []Param{
			TargetParam,
			{Name: "rate", Default: "64", Help: "KB/s per connection (>= 1)"},
			streamDoc,
			toxicityDoc,
		},
		New:   newBandwidth,
		Rules: toxicRules(),
	})
}

func newBandwidth(params map[string]string) (Fault, error) {
	params, st, err := parseStreamToxic(params, "rate")
	if err != nil {
		return nil, err
	}
	rate, err := intParam(params, "rate", 64, 1, 1<<40, "KB/s")
	if err != nil {
		return nil, err
	}
	return st.fault(kindBandwidth, "bandwidth", map[string]any{"rate": rate}, map[string]any{"rate_kb_s": rate}), nil
}
