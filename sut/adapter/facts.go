package adapter

import (
	"seckill-harness/checks"
	"seckill-harness/sut"
)

// Facts lists the system-under-test facts the file lets the harness read
// back, in a fixed order: sut.Stock (state.available and state.held,
// both), or sut.Available (state.available alone), sut.Records
// (state.record), sut.Keys (state.expiring_keys) and
// sut.Evictions (always: the keys live on the harness's Redis nodes, whose
// evicted_keys counters the harness reads). A file cannot declare the
// reference contract's cached request results (sut.Requests) or its
// send_pending and expiry queues (sut.Queues). state.user_hold is read
// for I4's evidence but is no fact of its own: I4 needs the records.
func (f *File) Facts() []sut.Fact {
	var out []sut.Fact
	r := f.tmpl.reads
	switch {
	case r["available"] != nil && r["held"] != nil:
		out = append(out, sut.Stock) // and so sut.Available (sut.Exposed)
	case r["available"] != nil:
		out = append(out, sut.Available)
	}
	if r["record"] != nil {
		out = append(out, sut.Records)
	}
	if len(f.tmpl.expiring) > 0 {
		out = append(out, sut.Keys)
	}
	return append(out, sut.Evictions)
}

// Skip is a check of the harness's table (checks.Invariants) that will
// skip on this file, and the facts it needs that the file does not declare.
type Skip struct {
	ID, Name string
	Missing  []sut.Fact
}

// Skips lists, in table order, the checks an adapter run judges that will
// skip for lack of a fact the file does not declare. The needs are the
// check table's own (checks.Invariant.Needs). Not listed: the checks
// judged from the answers when the facts are missing (FromAnswers: I3,
// I4), and those an adapter run does not report at all (the pipeline's,
// the service's, the local sold-out flag's).
func (f *File) Skips() []Skip {
	have := map[sut.Fact]bool{}
	for _, x := range f.Facts() {
		have[x] = true
	}
	have[sut.Available] = have[sut.Available] || have[sut.Stock]
	var out []Skip
	for _, inv := range checks.Invariants() {
		if inv.Pipeline || inv.EndToEnd || inv.Service || inv.LocalSoldOut || inv.FromAnswers {
			continue
		}
		var miss []sut.Fact
		for _, n := range inv.Needs {
			if !have[n] {
				miss = append(miss, n)
			}
		}
		if len(miss) > 0 {
			out = append(out, Skip{inv.ID, inv.Name, miss})
		}
	}
	return out
}
