package pipeline

import (
	"sync"
	"time"

	"seckill-harness/lua"
)

// Stage names a pipeline stage in the event log.
type Stage string

// Stages.
const (
	StageDispatcher Stage = "dispatcher"
	StageOrder      Stage = "order"
	StageRelease    Stage = "release"
	StageExpiry     Stage = "expiry"
	StageReconcile  Stage = "reconcile" // repairs only (see Reconciliation)
)

// Event ops.
const (
	OpTransition = "transition"
	OpCompensate = "compensate"
)

// Event is one script call a stage made and Redis' answer (or the error).
// Start and End carry the monotonic clock: compare them with the load's
// Began (runner.Result.Began) to place them on the run's timeline.
type Event struct {
	Seq        uint64
	Start, End time.Time
	Stage      Stage
	Op         string // OpTransition or OpCompensate
	RID        string
	Bucket     uint32
	User       string
	Target     lua.Status // transition target ("" for compensate)
	Code       int64      // the script's rc; -1 when the call failed (Err)
	Answer     string     // the rc's name: UPDATED, IDEMPOTENT, ILLEGAL_TRANSITION, RELEASED, NOT_COMPENSATABLE…
	// Status is what the answer says the reservation was: a transition's
	// previous_status, compensate's status field.
	Status   lua.Status
	Err      string
	Delivery uint64 // order stage: the MQ delivery being handled
	Note     string // why the stage made the call (fence, expired-no-order, …)
}

// Failed reports whether the call got no answer (its outcome is unknown or it was refused by Redis).
func (e *Event) Failed() bool { return e.Code < 0 }

// Send is one send of a message to the MQ.
type Send struct {
	Seq       uint64
	At        time.Time
	MessageID string
	RID       string
	Bucket    uint32
	Attempt   int    // 1 for the first send of this message_id
	Outcome   string // ack | error | timeout
	Stored    bool   // the broker holds a copy (ack, or a timeout whose ack was lost)
	Lost      bool   // acknowledged but then lost by the broker
	Abandoned bool   // the dispatcher crashed before recording the outcome in Redis
}

// Delivery is one copy of a message handed to the order service.
type Delivery struct {
	Seq       uint64
	At        time.Time
	MessageID string
	RID       string
	Bucket    uint32
	Send      uint64 // the send that stored this copy
	Copy      int    // nth delivery of this message_id (1-based), redeliveries included
	Redeliver bool   // the same copy again after the consumer failed (nack)
}

// OrderRow is the order stage's record of one committed order
// transaction (its decision, Result: created, a rejection, or refused). A
// delivery dropped by the inbox dedupe makes no row; with the inbox and the
// unique indexes in place there is at most one row per message_id. The
// database's own rows are OrderFacts (Orders.Facts).
type OrderRow struct {
	OrderID   string
	MessageID string
	RID       string
	Bucket    uint32
	User      string
	Result    string
	Reason    string // why: the constraint or condition that decided, what the fence answered
	At        time.Time
	Delivery  uint64
}

// Stuck is a reservation still not terminal when Drain gave up.
type Stuck struct {
	RID    string
	Bucket uint32
	Status lua.Status
}

// Stats are the pipeline's counters, a struct per stage.
type Stats struct {
	Send     SendStats
	Delivery DeliveryStats
	Order    OrderStats
	Release  ReleaseStats
	Expiry   ExpiryStats
	Script   ScriptStats
	Drain    DrainStats
	Service  ServiceStats
}

// SendStats are the dispatcher's sends to the MQ, their outcomes, and the
// dispatcher's crashes and restarts.
type SendStats struct {
	Sends            int64 // sends to the MQ (first sends and re-sends)
	Resends          int64 // sends of a message_id already sent before
	Acked            int64
	UnknownSends     int64 // timeouts: outcome unknown to the dispatcher
	SendErrors       int64 // the MQ refused the send
	TimeoutsStored   int64 // timeouts whose message the broker did store
	LostByMQ         int64
	AbandonedAtCrash int64 // sends cut between the MQ and the Redis transition by a dispatcher stop
	DispatcherStops  int64 // StopDispatcher calls (crashes), not the final Stop
	DispatcherStarts int64
}

// DeliveryStats are the MQ's deliveries to the order stage.
type DeliveryStats struct {
	Deliveries          int64
	DuplicateDeliveries int64 // deliveries of a message_id from a second (third…) stored send
	Redeliveries        int64 // the same copy again after the order stage failed on it
}

// OrderStats are the order stage's outcomes.
type OrderStats struct {
	Orders             int64 // order transactions committed "created"
	Rejected           int64 // … committed with a rejection (business, no_stock, user_already_ordered, duplicate_reservation)
	NoStock            int64 // … of which the conditional decrement found no stock
	UserAlreadyOrdered int64 // … of which the one-valid-order-per-user index refused
	// DuplicateReservations: the reservation or message already had an order.
	DuplicateReservations int64
	Refused               int64 // committed "refused" (the Redis fence refused: no order)
	DroppedByDefect       int64 // deliveries dropped by Defects.OrderDropsMessages
	OrderTxErrors         int64 // order transactions rolled back on an error (redelivered)
	DuplicatesSkipped     int64 // deliveries dropped by the message_id dedupe
}

// ReleaseStats are the units given back.
type ReleaseStats struct {
	Releases         int64 // compensate answered RELEASED (any stage)
	ReleasesRejected int64 // … by the release stage
	ReleasesExpired  int64 // … by the expiry checker
}

// ExpiryStats are the expiry checker's.
type ExpiryStats struct {
	ExpiriesChecked   int64 // expired reservations examined
	ExpiryHeldByOrder int64 // left alone: the order DB has (or is making) its order
	ExpiryHeldByMQ    int64 // left alone: the MQ still holds a copy of its message
}

// ScriptStats are the calls of transition.lua and compensate.lua.
type ScriptStats struct {
	Transitions    int64
	IllegalAnswers int64 // transition answered ILLEGAL_TRANSITION (the machine refused)
	RedisErrors    int64
}

// DrainStats are Drain's.
type DrainStats struct {
	Stuck   int64 // not terminal when Drain gave up (0 after a complete drain)
	DrainMs int64 // how long the drain took (or its timeout)
	// DrainExtendedMs is how long the drain ran past its timeout because
	// reservations kept coming to an end (Drain; 0: within its timeout).
	DrainExtendedMs int64
	// DrainSwept counts the RELEASE_PENDING or REJECTED leftovers the drain
	// sent to be finished before their TTL (Drain's sweep; a leftover the
	// sweep could not finish at once counts at each sweep).
	DrainSwept int64
}

// ServiceStats are the access service's own sends
// (DispatcherConfig.ScanAfter > 0): made, lost by a crash between reserve
// and send (service-crash), and of those, sent later by the send_pending
// scanner.
type ServiceStats struct {
	ServiceSends, ServiceSendsLost, RecoveredByScanner int64
}

// Evidence is everything the pipeline recorded, for the P-checks
// (checks, through checks.Judge) and reports.
type Evidence struct {
	Config     Config
	Defects    []string
	Buckets    uint32
	Events     []Event
	Sends      []Send
	Deliveries []Delivery
	Orders     []OrderRow
	Stats      Stats
	// Drained is set once Drain ran (whether it completed or timed out);
	// DrainErr says why it did not complete; Stuck lists what was left.
	Drained  bool
	DrainErr string
	Stuck    []Stuck
	// OrderDB is the PostgreSQL schema of the order tables; Throughput the
	// final stage's speed; Reconciliation the 对账 stage's findings.
	OrderDB        string
	Throughput     OrderThroughput
	Reconciliation Reconciliation
	LastOrderError string // the last rolled-back order transaction's error ("" if none)
}

type eventLog struct {
	mu     sync.Mutex
	seq    uint64
	events []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.seq++
	e.Seq = l.seq
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) snapshot() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Summary is the evidence in a few figures, for report.json (e.g. under
// "pipeline"): the counters, the drain's result and the defects on.
func (e *Evidence) Summary() map[string]any {
	s := e.Stats
	m := map[string]any{
		"sends": s.Send.Sends, "resends": s.Send.Resends, "acked": s.Send.Acked, "unknown_sends": s.Send.UnknownSends,
		"send_errors": s.Send.SendErrors, "timeouts_stored": s.Send.TimeoutsStored, "lost_by_mq": s.Send.LostByMQ,
		"abandoned_at_crash": s.Send.AbandonedAtCrash, "deliveries": s.Delivery.Deliveries,
		"duplicate_deliveries": s.Delivery.DuplicateDeliveries, "redeliveries": s.Delivery.Redeliveries,
		"duplicates_skipped": s.Order.DuplicatesSkipped, "orders": s.Order.Orders, "rejected": s.Order.Rejected,
		"refused": s.Order.Refused, "releases": s.Release.Releases, "releases_rejected": s.Release.ReleasesRejected,
		"releases_expired": s.Release.ReleasesExpired, "expiries_checked": s.Expiry.ExpiriesChecked,
		"expiry_held_by_order": s.Expiry.ExpiryHeldByOrder, "expiry_held_by_mq": s.Expiry.ExpiryHeldByMQ,
		"transitions": s.Script.Transitions, "illegal_answers": s.Script.IllegalAnswers, "redis_errors": s.Script.RedisErrors,
		"dispatcher_crashes": s.Send.DispatcherStops, "stuck": s.Drain.Stuck, "drained": e.Drained, "drain_ms": s.Drain.DrainMs, "drain_extended_ms": s.Drain.DrainExtendedMs, "drain_swept": s.Drain.DrainSwept,
		"no_stock": s.Order.NoStock, "user_already_ordered": s.Order.UserAlreadyOrdered, "duplicate_reservations": s.Order.DuplicateReservations,
		"order_tx_errors": s.Order.OrderTxErrors, "dropped_by_defect": s.Order.DroppedByDefect,
		"service_sends": s.Service.ServiceSends, "service_sends_lost": s.Service.ServiceSendsLost, "recovered_by_scanner": s.Service.RecoveredByScanner,
		"order_db":       map[string]any{"schema": e.OrderDB, "throughput": e.Throughput},
		"reconciliation": e.Reconciliation,
	}
	if e.LastOrderError != "" {
		m["last_order_error"] = e.LastOrderError
	}
	if e.DrainErr != "" {
		m["drain_error"] = e.DrainErr
	}
	if len(e.Defects) > 0 {
		m["defects"] = e.Defects
	}
	return m
}
