package faults

import "fmt"

// slicer: toxiproxy slicer toxic on the target's proxy: data is cut into
// slices of average_size ± size_variation bytes, delay µs apart (replies
// arrive in pieces, exercising the client's reader).

const kindSlicer = "slicer"

var (
	slicerAverage   = intParam("average_size", 1, 1, 1<<30, "bytes", "average slice size in bytes (>= 1)")
	slicerVariation = intParam("size_variation", 0, 0, 1<<30, "bytes", "± variation of the slice size in bytes (< average_size)")
	slicerDelay     = intParam("delay", 100, 0, 60_000_000, "microseconds", "delay between slices in microseconds")
)

var slicerKind = Spec{
	Kind:   kindSlicer,
	Help:   "slice traffic through the target node's proxy into small delayed pieces",
	Params: streamToxicParams(slicerAverage.Param, slicerVariation.Param, slicerDelay.Param),
	Build:  newSlicer,
	Rules:  toxicRules(),
}

func newSlicer(v Values) (Fault, error) {
	avg, vari, delay := slicerAverage.Of(v), slicerVariation.Of(v), slicerDelay.Of(v)
	if vari >= avg {
		return nil, fmt.Errorf("size_variation=%d: must be less than average_size (%d)", vari, avg)
	}
	return streamToxicFault(v, kindSlicer, "slicer", map[string]any{"average_size": avg, "size_variation": vari, "delay": delay},
		map[string]any{"average_size": avg, "size_variation": vari, "delay_us": delay}), nil
}
