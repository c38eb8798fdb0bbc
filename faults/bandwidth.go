package faults

// bandwidth: toxiproxy bandwidth toxic on the target's proxy, limiting the
// chosen stream to rate KB/s per connection.

const kindBandwidth = "bandwidth"

var bandwidthRate = intParam("rate", 64, 1, 1<<40, "KB/s", "KB/s per connection (>= 1)")

var bandwidthKind = Spec{
	Kind:   kindBandwidth,
	Help:   "limit traffic through the target node's proxy to rate KB/s per connection",
	Params: streamToxicParams(bandwidthRate.Param),
	Build:  newBandwidth,
	Rules:  toxicRules(),
}

func newBandwidth(v Values) (Fault, error) {
	rate := bandwidthRate.Of(v)
	return streamToxicFault(v, kindBandwidth, "bandwidth", map[string]any{"rate": rate}, map[string]any{"rate_kb_s": rate}), nil
}
