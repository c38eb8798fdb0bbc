package faults

import "fmt"

// slicer: toxiproxy slicer toxic on the target's proxy: data is cut into
// slices of average_size ± size_variation bytes, delay µs apart (replies
// arrive in pieces, exercising the client's reader).

const kindSlicer = "slicer"

func init() {
	Register(Spec{
		Kind: kindSlicer,
		Help: "slice traffic through the target node's proxy into small delayed pieces",
		Params: []Param{
			TargetParam,
			{Name: "average_size", Default: "1", Help: "average slice size in bytes (>= 1)"},
			{Name: "size_variation", Default: "0", Help: "± variation of the slice size in bytes (< average_size)"},
			{Name: "delay", Default: "100", Help: "delay between slices in microseconds"},
			streamDoc,
			toxicityDoc,
		},
		New:   newSlicer,
		Rules: toxicRules(),
	})
}

func newSlicer(params map[string]string) (Fault, error) {
	params, st, err := parseStreamToxic(params, "average_size", "size_variation", "delay")
	if err != nil {
		return nil, err
	}
	avg, err := intParam(params, "average_size", 1, 1, 1<<30, "bytes")
	if err != nil {
		return nil, err
	}
	vari, err := intParam(params, "size_variation", 0, 0, 1<<30, "bytes")
	if err != nil {
		return nil, err
	}
	if vari >= avg {
		return nil, fmt.Errorf("size_variation=%d: must be less than average_size (%d)", vari, avg)
	}
	delay, err := intParam(params, "delay", 100, 0, 60_000_000, "microseconds")
	if err != nil {
		return nil, err
	}
	return st.fault(kindSlicer, "slicer", map[string]any{"average_size": avg, "size_variation": vari, "delay": delay},
		map[string]any{"average_size": avg, "size_variation": vari, "delay_us": delay}), nil
}
