package sut

import (
	"context"

	"seckill-harness/lua"
	"seckill-harness/reports"
)

// Fact is one kind of state a system can show; each check of the table
// declares the facts it needs (checks.Invariant.Needs). Its value is how
// the skip reason names it: "this system under test does not expose <fact>".
type Fact string

// The facts a StateReader may expose.
const (
	// Stock: each bucket's stock (initial, available, held, released),
	// at the end and sampled during the run.
	Stock Fact = "the stock per bucket (available and held)"
	// Available: each bucket's available units alone, at the end and
	// sampled during the run. Every system that exposes Stock exposes it;
	// one that shows its available units but no held counter exposes it
	// alone (ReadStock then returns Reserved 0, which no check reads).
	Available Fact = "the available stock per bucket"
	// Records: the reservation records (status, user, order id).
	Records Fact = "its reservation records"
	// Requests: the cached result of a request id.
	Requests Fact = "its cached request results"
	// Keys: the activity's keys and their expiries.
	Keys Fact = "its keys and their expiries"
	// Queues: the send_pending and reservation_expiry queues.
	Queues Fact = "its send_pending and expiry queues"
	// Evictions: the Redis nodes that hold its keys are the harness's,
	// whose evicted_keys counters tell whether a key of it was evicted.
	Evictions Fact = "the eviction counters of the Redis nodes that hold its state"
)

// AllFacts lists every fact, in a fixed order.
func AllFacts() []Fact { return []Fact{Stock, Available, Records, Requests, Keys, Queues, Evictions} }

// StateReader is the ability to read a system's state back. Exposes says
// which facts it can show; the read methods of the others are never
// called. Reads are bounded (never KEYS or SCAN). A Go error means the
// state could not be read (a lost connection); a value that exists but
// cannot be read is a fact (kept in the result).
type StateReader interface {
	Exposes() []Fact
	// ReadStock reads bucket b's stock (Stock), or its available units
	// alone when the system exposes Available without Stock.
	ReadStock(ctx context.Context, a *lua.Activity, b uint32) (lua.Stock, error)
	// ReadQueues reads bucket b's send_pending and expiry members (Queues).
	ReadQueues(ctx context.Context, a *lua.Activity, b uint32) (sendPending, expiry []string, err error)
	// ReadRecords reads the records of want (reservation id -> bucket);
	// an absent record is absent from the map (Records).
	ReadRecords(ctx context.Context, a *lua.Activity, want map[string]uint32) (map[string]Record, error)
	// ReadRequests reads the cached result of each request, in order (Requests).
	ReadRequests(ctx context.Context, a *lua.Activity, reqs []RequestRef) ([]RequestFact, error)
	// ReadKeys reads the expiry and size of every key of a that q names
	// or the contract names per bucket (Keys).
	ReadKeys(ctx context.Context, a *lua.Activity, q KeyQuery) (*KeyFacts, error)
}

// Exposed is the set of facts s can show (through its wrappers): none
// without a StateReader. A system that exposes Stock exposes Available.
func Exposed(s System) map[Fact]bool {
	out := map[Fact]bool{}
	if r, ok := Ability[StateReader](s); ok {
		for _, f := range r.Exposes() {
			out[f] = true
		}
	}
	if out[Stock] {
		out[Available] = true
	}
	return out
}

// Record is what the checks read of one reservation record.
type Record struct {
	Status lua.Status
	User   string
	Bucket uint32
	// OrderID, ReleaseReason and ErrorCode are the pipeline's fields ("" when unset).
	OrderID, ReleaseReason, ErrorCode string
}

// RequestRef names one cached request result: request ids are cached per
// bucket.
type RequestRef struct {
	Bucket uint32
	ID     string
}

// RequestFact is one cached request result as read back. Found is false
// when none is cached (never executed, or lost); Err holds a read or parse
// error (the result then is unknown, not absent).
type RequestFact struct {
	Found  bool
	Result lua.RequestResult
	Err    string
}

// KeyQuery names the keys of a run beyond the contract's per-bucket ones:
// the reservation records found, and the users whose marker may exist.
type KeyQuery struct {
	Records    map[string]Record
	Users      []BucketUser // users answered ACCEPTED, USER_ALREADY_RESERVED or UNKNOWN
	Allowances []reports.ExpiryAllowance
}

// BucketUser is one user and its bucket.
type BucketUser struct {
	Bucket uint32
	User   string
}
