package checks

import (
	"iter"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Facts is everything the invariants judge: the run's history and inputs,
// and what was read back from the system under test once, after the run,
// by CollectFacts (what it exposes of it).
// Judging (JudgeFacts) is a pure function of Facts: no check reads Redis,
// so each one can be tried on a hand-built Facts value.
type Facts struct {
	// Planned is each bucket's share of the activity's stock as it was set
	// up (the first total%B buckets get one more): what no-oversell bounds.
	Planned []int64
	// Stock is each bucket's stock hash as read back at the end.
	Stock []lua.Stock
	// Ops is the history (with the pipeline's releases when the run had a
	// pipeline: see WithPipelineReleases) when it is held in memory; for a
	// spooled history CollectFacts keeps the history itself and Ops is
	// empty. The judges read both through all.
	Ops []history.Op
	// spooled is the history CollectFacts read a spooled run from (nil
	// when the operations are in Ops).
	spooled *history.History
	// Samples are the stock readings taken during the run.
	Samples []history.StockSample
	// Records are the reservation records read back, by reservation id:
	// every id the history names or may have created (an UNKNOWN reserve's
	// derived id), every id the pipeline's log names, every member of the
	// two zsets. A reservation without a record is absent.
	Records map[string]ReservationRecord
	// Requests are the cached request results read back for the reserve
	// requests judged against Redis: those that ended UNKNOWN (I7), were
	// re-sent, or answered REQUEST_ID_CONFLICT to someone (I5), or were
	// answered FAILED by a service (S4).
	Requests map[RequestKey]RequestFact
	// OwnReservation is the reservation id the contract derives from a
	// user and request id, for the reserve operations I5 compares with it
	// (re-sent ones and USER_ALREADY_RESERVED answers) and those a service
	// answered FAILED (S4).
	OwnReservation map[UserRequest]string
	// SendPendingLeft and ExpiryLeft are the sizes of each bucket's
	// send_pending and reservation_expiry zsets at the end.
	SendPendingLeft, ExpiryLeft []int64

	// FaultsInjected: a fault ran, so stock may legitimately stay unsold (I9).
	FaultsInjected bool
	// LocalSoldOutTTL is the TTL of the reserve path's local sold-out flag;
	// 0 without one (L1 then does not apply).
	LocalSoldOutTTL time.Duration
	// Generator is the share of the load the history holds (see CheckInput).
	Generator history.Generator
	// ClockSkew bounds how far apart merged histories' clocks may be (I9).
	ClockSkew time.Duration
	// Pipeline is the pipeline's event log; nil when the run had none (the
	// pipeline checks then do not apply).
	Pipeline *PipelineEvidence
	// EndToEnd are the order database's facts (CollectEndToEnd); nil when
	// they were not collected (the end-to-end checks then do not apply).
	EndToEnd *EndToEndFacts
	// Keys are the activity's keys and their expiries (K1) and sizes; nil
	// when they were not read.
	Keys *KeyFacts
	// Evictions are the servers' evicted_keys counters over the run (K2),
	// as the caller read them (CheckInput.Evictions); nil when not read.
	Evictions *EvictionFacts
	// Service are the service child's connections (CheckInput.Service);
	// nil: no service child.
	Service *ServiceRoutingFacts
	// Preflight is what the system's pre-flight found before the load
	// (A1); nil when the system has none (it is not an adapter file).
	Preflight *sut.Preflight
	// Answers are what a service under test's answers showed (its
	// contract fields, the requests without an answer); nil when the
	// system is not a service (the service checks then skip).
	Answers *sut.Answers
	// Masterless are the windows in which a fault left buckets' slots
	// without a master (CheckInput.Masterless).
	Masterless []MasterlessWindow
	// CachedRequestIDs are the request ids the service cached, per bucket,
	// when it keeps the reference contract's keys (sut.RequestLister);
	// nil when not read.
	CachedRequestIDs map[uint32][]string
	// Unexposed are the facts the system under test does not expose: a
	// check that needs one skips (Invariant.Needs). Nil for facts built
	// by hand: everything exposed.
	Unexposed map[sut.Fact]bool

	memo factsMemo // what judging builds and keeps
}

// factsMemo is what judging the facts builds and keeps beside them.
type factsMemo struct {
	derived *derivedFacts // indexes shared by several checks, built on first use
	// linDrawing is the linearizability check's drawing of the smallest
	// partition no order explains (nil: none), for CheckReport.Drawing.
	linDrawing *LinDrawing
}

// MasterlessWindow is a time of the load (the history's clock) in which
// a fault left the slots of Buckets without any master.
type MasterlessWindow struct {
	Fault    string
	From, To time.Duration
	Buckets  []uint32
}

// ReservationRecord is what the checks read of one reservation record.
type ReservationRecord = sut.Record

// RequestKey names one cached request result: request ids are cached per
// bucket.
type RequestKey struct {
	Bucket uint16
	Req    uint32
}

// RequestFact is one cached request result as read back (sut.RequestFact).
type RequestFact = sut.RequestFact

// KeyFacts are the activity's keys as read back (sut.KeyFacts).
type KeyFacts = sut.KeyFacts

// UserRequest is a (user, request id) pair by index.
type UserRequest struct {
	User, Req uint32
}

// derivedFacts are views of Facts that several checks use.
type derivedFacts struct {
	ackedByBucket []map[string]struct{}    // distinct reservation ids answered ACCEPTED, per bucket
	acked         int                      // their number over every bucket
	obs           map[string][]observation // per reservation, the statuses the pipeline's answers revealed
}

// all yields every operation of the history judged, with its index (see
// History.All: copy an Op to keep it).
func (f *Facts) all() iter.Seq2[int, *history.Op] {
	if f.spooled != nil {
		return f.spooled.All()
	}
	return (&history.History{Ops: f.Ops}).All()
}

// opCount is the number of operations judged.
func (f *Facts) opCount() int {
	if f.spooled != nil {
		return f.spooled.Len()
	}
	return len(f.Ops)
}

// Buckets is the activity's bucket count.
func (f *Facts) Buckets() int { return len(f.Planned) }

func (f *Facts) derive() *derivedFacts {
	if f.memo.derived != nil {
		return f.memo.derived
	}
	d := &derivedFacts{ackedByBucket: make([]map[string]struct{}, f.Buckets())}
	for b := range d.ackedByBucket {
		d.ackedByBucket[b] = map[string]struct{}{}
	}
	for _, o := range f.all() {
		if o.Accepted() && o.RID != "" && int(o.Bucket) < len(d.ackedByBucket) {
			if _, dup := d.ackedByBucket[o.Bucket][o.RID]; !dup {
				d.ackedByBucket[o.Bucket][o.RID] = struct{}{}
				d.acked++
			}
		}
	}
	if f.Pipeline != nil {
		d.obs = observe(f.Pipeline)
	}
	f.memo.derived = d
	return d
}
