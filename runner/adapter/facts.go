package adapter

// Fact is one kind of state the file lets the harness read back. The
// values are the names of the system-under-test facts of issue 27
// (sut.Stock, sut.Records, …); UserHolds has none there yet.
type Fact string

// The facts an adapter file can declare.
const (
	// Stock: state.available and state.held, both.
	Stock Fact = "Stock"
	// Records: state.record, whether a reservation's record exists.
	Records Fact = "Records"
	// Keys: state.expiring_keys, the keys that must carry a TTL.
	Keys Fact = "Keys"
	// UserHolds: state.user_hold, whether a user holds a reservation.
	UserHolds Fact = "UserHolds"
	// Evictions: the keys live on the harness's Redis nodes, whose
	// evicted_keys counters the harness reads: always exposed.
	Evictions Fact = "Evictions"
	// Requests and Queues are facts of the reference contract (its cached
	// request results, its send_pending and expiry queues) that an adapter
	// file cannot declare.
	Requests Fact = "Requests"
	Queues   Fact = "Queues"
)

// Facts lists the facts the file declares, in a fixed order.
func (f *File) Facts() []Fact {
	var out []Fact
	r := f.tmpl.reads
	if r["available"] != nil && r["held"] != nil {
		out = append(out, Stock)
	}
	if r["record"] != nil {
		out = append(out, Records)
	}
	if len(f.tmpl.expiring) > 0 {
		out = append(out, Keys)
	}
	if r["user_hold"] != nil {
		out = append(out, UserHolds)
	}
	return append(out, Evictions)
}

// CheckNeed is one check of the harness's table and the facts it needs.
type CheckNeed struct {
	ID, Name string
	Needs    []Fact
}

// checkNeeds copies the needs of the check table (issue 27's
// checks.Invariant.Needs) for the checks that run without the order
// pipeline; the pipeline checks (P*, E*) need the reference contract's
// records and queues and skip for every adapter. Once the table is
// importable this list is derived from it.
var checkNeeds = []CheckNeed{
	{"I1", "stock_conservation", []Fact{Stock}},
	{"I2", "reservation_accounting", []Fact{Records, Stock}},
	{"I3", "no_oversell", []Fact{Records}},
	{"I4", "one_per_user", []Fact{Records}},
	{"I5", "idempotency", []Fact{Requests}},
	{"I6", "no_lost_acks", []Fact{Records}},
	{"I7", "unknowns_resolved", []Fact{Requests}},
	{"I8", "release_at_most_once", []Fact{Records}},
	{"I9", "liveness", []Fact{Stock}},
	{"I10", "wait_confirmed_not_lost", []Fact{Records}},
	{"K1", "keys_expire_by_retention", []Fact{Keys}},
	{"K2", "no_key_evicted", []Fact{Evictions}},
	{"L1", "local_soldout_recovery", []Fact{Stock}},
}

// Skip is a check that will skip and the facts it lacks.
type Skip struct {
	Check   CheckNeed
	Missing []Fact
}

// Skips lists the checks that will skip for lack of facts the file does
// not declare, in table order.
func (f *File) Skips() []Skip {
	have := map[Fact]bool{}
	for _, x := range f.Facts() {
		have[x] = true
	}
	var out []Skip
	for _, c := range checkNeeds {
		var miss []Fact
		for _, n := range c.Needs {
			if !have[n] {
				miss = append(miss, n)
			}
		}
		if len(miss) > 0 {
			out = append(out, Skip{c, miss})
		}
	}
	return out
}
