package pipeline

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Config is the whole pipeline. Start from DefaultConfig and override: the
// zero value of a share means 0, not "default".
type Config struct {
	// Seed makes every draw (MQ outcome per send, order decision per message)
	// a pure function of (seed, message_id, attempt): reruns draw the same.
	Seed       int64
	MQ         MQConfig
	Order      OrderConfig
	Dispatcher DispatcherConfig
	Release    ReleaseConfig
	Expiry     ExpiryConfig
	// CallTimeout bounds every Redis call of the stages; 0 means 2s.
	CallTimeout time.Duration
	// Defects turn on known-bad behaviour (negative controls): a correct
	// pipeline leaves them all false.
	Defects Defects
	// Orders is the order service's PostgreSQL database (OpenOrders); Start
	// refuses a pipeline without one. Not part of a scenario: the run
	// supplies it.
	Orders *Orders `json:"-" yaml:"-"`
	// Reconcile is the reconciliation stage (Redis reservations against
	// PostgreSQL orders) running during the load and once after the drain.
	Reconcile ReconcileConfig
}

// ReconcileConfig is the reconciliation stage.
type ReconcileConfig struct {
	// Every is the pause between passes during the load; 0 means 500ms.
	Every time.Duration
	// NoRepair turns the one repair off: rebuilding a Redis status from
	// PostgreSQL (an ENQUEUED reservation whose order exists is moved to
	// ORDER_CREATED through transition.lua). Nothing else is ever repaired.
	NoRepair bool
}

// MQConfig is the simulated message queue's behaviour per send.
type MQConfig struct {
	// Ack, Error and Timeout are the shares of sends that are acknowledged,
	// refused (the broker did not take the message) and timed out (outcome
	// unknown). They must add up to 1 (all three 0 means: always ack).
	Ack     float64
	Error   float64
	Timeout float64
	// TimeoutDelivered is the share of timed-out sends the broker did store
	// (only the acknowledgement was lost): those make duplicates when the
	// reservation is re-sent with the same message_id.
	TimeoutDelivered float64
	// TimeoutAfter is how long a timed-out send blocks the sender before it
	// gives up (the message, when stored, is already consumable meanwhile).
	TimeoutAfter time.Duration
	// Lost is the share of acknowledged messages the broker then loses
	// (never delivered): only the expiry checker can end such a reservation.
	Lost float64
}

// OrderConfig is the order service (its database is Config.Orders).
type OrderConfig struct {
	// Reject is the share of messages whose order is rejected (drawn per
	// message_id, so a duplicate gets the same decision).
	Reject float64
	// Delay is the time from a message reaching the MQ to the order service
	// acting on it (consumer lag); it does not limit throughput.
	Delay time.Duration
	// Workers consume the MQ concurrently; 0 means 8.
	Workers int
}

// DispatcherConfig is the send_pending dispatcher (one per bucket).
type DispatcherConfig struct {
	// Every is the pause between polls when nothing (or less than a batch)
	// was due; 0 means 20ms.
	Every time.Duration
	// Batch is N of ZRANGEBYSCORE send_pending -inf now LIMIT 0 N; 0 means 100.
	Batch int
	// Workers send one batch concurrently per bucket; 0 means 8.
	Workers int
	// RetryAfter is next_retry_at_ms - now for a SEND_UNKNOWN; 0 means 100ms.
	RetryAfter time.Duration
	// ScanAfter, when > 0, makes the access service send each reservation's
	// message itself right after its reserve answered ACCEPTED
	// (Pipeline.ServiceSend), and the dispatcher the send_pending scanner:
	// it sends only members due ScanAfter ago or earlier (reserved, or due
	// for a re-send, at least ScanAfter before), the sends the service did
	// not make. 0: the access service does not send; the dispatcher sends
	// every member as soon as it is due.
	ScanAfter time.Duration
}

// ReleaseConfig is the release stage (REJECTED -> RELEASE_PENDING -> compensate).
type ReleaseConfig struct {
	Workers int           // 0 means 4
	Retry   time.Duration // pause after a Redis error; 0 means 50ms
	// Attempts bounds the retries of one release; leftovers stay REJECTED or
	// RELEASE_PENDING for the expiry checker. 0 means 5.
	Attempts int
}

// ExpiryConfig is the reservation_expiry checker (one per bucket).
type ExpiryConfig struct {
	Every    time.Duration // pause between sweeps; 0 means 100ms
	Batch    int           // N of ZRANGEBYSCORE reservation_expiry -inf now LIMIT off N; 0 means 100
	MaxPages int           // pages per sweep; 0 means 20
}

// Defects are negative controls: each makes one stage behave like a known
// broken implementation, so the P-checks can be shown to catch it.
type Defects struct {
	// OrderNoDedupe: the order stage has no inbox (no dedupe on message_id)
	// and the orders table none of its unique indexes (message_id,
	// reservation_id, order_id, one valid order per user): every delivery,
	// duplicates included, is turned into an order.
	OrderNoDedupe bool
	// OrderIgnoresFence: the order stage writes the order even when its
	// Redis fence (-> ORDER_CREATED) was refused (e.g. the reservation was
	// released meanwhile): the unit is sold twice.
	OrderIgnoresFence bool
	// ExpiryDirectCompensate: the expiry checker runs compensate.lua on an
	// expired RESERVED / SEND_UNKNOWN / ENQUEUED reservation directly,
	// without asking the order DB or the MQ and without RELEASE_PENDING.
	ExpiryDirectCompensate bool
	// ExpiryNoCheck: the expiry checker fences expired reservations
	// (-> RELEASE_PENDING) and compensates them without asking the order DB
	// and the MQ first ("ENQUEUED released because it timed out").
	ExpiryNoCheck bool
	// ReleaseOnSendTimeout: the dispatcher treats a send timeout as a failed
	// send and releases the reservation right away: it records SEND_UNKNOWN,
	// fences it (SEND_UNKNOWN -> RELEASE_PENDING, which the machine allows)
	// and compensates at once, without waiting for the MQ / order DB check
	// ("SEND_UNKNOWN released directly", spec §8.4, §13.1, §18 Q9). A
	// timed-out message the broker did store (MQConfig.TimeoutDelivered) is
	// still delivered: its order meets a released (and resold) unit.
	ReleaseOnSendTimeout bool
	// OrderNoStockCondition: the order transaction decrements the stock row
	// without "AND sold < total": when Redis let more through than the
	// stock (a bad reserve script, lost reservations), PostgreSQL oversells.
	OrderNoStockCondition bool
	// OrderNoUserUnique: the orders table lacks the one-valid-order-per-user
	// unique index: two reservations of one user become two orders.
	OrderNoUserUnique bool
	// OrderDropsMessages: the order stage acknowledges one message in four
	// (drawn per message_id) without handling it: no transaction, no inbox
	// row, no transition; the reservation stays ENQUEUED until it expires.
	OrderDropsMessages bool
	// DispatcherNeverSends: the dispatcher polls send_pending and never
	// sends: reservations stay RESERVED until the expiry checker releases
	// them. With the access service sending (DispatcherConfig.ScanAfter),
	// this is a disabled send_pending scanner: only the service's own
	// sends happen.
	DispatcherNeverSends bool
}

// Names lists the defects that are on, for reports.
func (d Defects) Names() []string {
	var out []string
	for _, x := range []struct {
		on   bool
		name string
	}{
		{d.OrderNoDedupe, "order-no-dedupe"},
		{d.OrderIgnoresFence, "order-ignores-fence"},
		{d.ExpiryDirectCompensate, "expiry-direct-compensate"},
		{d.ExpiryNoCheck, "expiry-no-check"},
		{d.ReleaseOnSendTimeout, "release-on-send-timeout"},
		{d.OrderNoStockCondition, "order-no-stock-condition"},
		{d.OrderNoUserUnique, "order-no-user-unique"},
		{d.OrderDropsMessages, "order-drops-messages"},
		{d.DispatcherNeverSends, "dispatcher-never-sends"},
	} {
		if x.on {
			out = append(out, x.name)
		}
	}
	return out
}

// DefectNames lists the names ParseDefects accepts.
func DefectNames() []string {
	return []string{"order-no-dedupe", "order-ignores-fence", "expiry-direct-compensate", "expiry-no-check", "release-on-send-timeout",
		"order-no-stock-condition", "order-no-user-unique", "order-drops-messages", "dispatcher-never-sends"}
}

// ParseDefects turns defect names (as in Defects.Names) into Defects.
func ParseDefects(names []string) (Defects, error) {
	var d Defects
	for _, n := range names {
		switch strings.TrimSpace(n) {
		case "order-no-dedupe":
			d.OrderNoDedupe = true
		case "order-ignores-fence":
			d.OrderIgnoresFence = true
		case "expiry-direct-compensate":
			d.ExpiryDirectCompensate = true
		case "expiry-no-check":
			d.ExpiryNoCheck = true
		case "release-on-send-timeout":
			d.ReleaseOnSendTimeout = true
		case "order-no-stock-condition":
			d.OrderNoStockCondition = true
		case "order-no-user-unique":
			d.OrderNoUserUnique = true
		case "order-drops-messages":
			d.OrderDropsMessages = true
		case "dispatcher-never-sends":
			d.DispatcherNeverSends = true
		default:
			return Defects{}, fmt.Errorf("pipeline defect %q: want one of %s", n, strings.Join(DefectNames(), ", "))
		}
	}
	return d, nil
}

// DefaultConfig: every send acknowledged, no rejects, no delay; the stages'
// sizes and periods as documented on each field.
func DefaultConfig() Config {
	return Config{
		Seed:        42,
		MQ:          MQConfig{Ack: 1, TimeoutDelivered: 0.5, TimeoutAfter: 20 * time.Millisecond},
		Order:       OrderConfig{Workers: 8},
		Dispatcher:  DispatcherConfig{Every: 20 * time.Millisecond, Batch: 100, Workers: 8, RetryAfter: 100 * time.Millisecond},
		Release:     ReleaseConfig{Workers: 4, Retry: 50 * time.Millisecond, Attempts: 5},
		Expiry:      ExpiryConfig{Every: 100 * time.Millisecond, Batch: 100, MaxPages: 20},
		CallTimeout: 2 * time.Second,
	}
}

// withDefaults fills zero sizes and periods (not shares).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MQ.Ack == 0 && c.MQ.Error == 0 && c.MQ.Timeout == 0 {
		c.MQ.Ack = 1
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	setI := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	setD(&c.CallTimeout, d.CallTimeout)
	setI(&c.Order.Workers, d.Order.Workers)
	setD(&c.Dispatcher.Every, d.Dispatcher.Every)
	setI(&c.Dispatcher.Batch, d.Dispatcher.Batch)
	setI(&c.Dispatcher.Workers, d.Dispatcher.Workers)
	setD(&c.Dispatcher.RetryAfter, d.Dispatcher.RetryAfter)
	setI(&c.Release.Workers, d.Release.Workers)
	setD(&c.Release.Retry, d.Release.Retry)
	setI(&c.Release.Attempts, d.Release.Attempts)
	setD(&c.Expiry.Every, d.Expiry.Every)
	setI(&c.Expiry.Batch, d.Expiry.Batch)
	setI(&c.Expiry.MaxPages, d.Expiry.MaxPages)
	setD(&c.Reconcile.Every, 500*time.Millisecond)
	return c
}

// MaxWorkers caps each stage's workers (order, dispatcher, release): a
// count a typo makes huge would open that many connections at once.
const MaxWorkers = 1024

// Validate rejects impossible values; errors name the field.
func (c Config) Validate() error {
	var errs []error
	share := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("pipeline %s = %g: want a share between 0 and 1", name, v))
		}
	}
	share("mq.ack", c.MQ.Ack)
	share("mq.error", c.MQ.Error)
	share("mq.timeout", c.MQ.Timeout)
	share("mq.timeout_delivered", c.MQ.TimeoutDelivered)
	share("mq.lost", c.MQ.Lost)
	share("order.reject", c.Order.Reject)
	if s := c.MQ.Ack + c.MQ.Error + c.MQ.Timeout; s != 0 && math.Abs(s-1) > 1e-9 {
		errs = append(errs, fmt.Errorf("pipeline mq shares ack %g + error %g + timeout %g = %g: want 1", c.MQ.Ack, c.MQ.Error, c.MQ.Timeout, s))
	}
	for name, d := range map[string]time.Duration{"mq.timeout_after": c.MQ.TimeoutAfter, "order.delay": c.Order.Delay,
		"dispatcher.every": c.Dispatcher.Every, "dispatcher.retry_after": c.Dispatcher.RetryAfter, "dispatcher.scan_after": c.Dispatcher.ScanAfter,
		"expiry.every": c.Expiry.Every, "release.retry": c.Release.Retry, "call_timeout": c.CallTimeout,
		"reconcile.every": c.Reconcile.Every} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("pipeline %s = %s: must not be negative", name, d))
		}
	}
	for name, n := range map[string]int{"order.workers": c.Order.Workers, "dispatcher.batch": c.Dispatcher.Batch,
		"dispatcher.workers": c.Dispatcher.Workers, "release.workers": c.Release.Workers, "release.attempts": c.Release.Attempts,
		"expiry.batch": c.Expiry.Batch, "expiry.max_pages": c.Expiry.MaxPages} {
		if n < 0 {
			errs = append(errs, fmt.Errorf("pipeline %s = %d: must not be negative", name, n))
		}
	}
	for name, n := range map[string]int{"order.workers": c.Order.Workers, "dispatcher.workers": c.Dispatcher.Workers,
		"release.workers": c.Release.Workers} {
		if n > MaxWorkers {
			errs = append(errs, fmt.Errorf("pipeline %s = %d: at most %d (each worker holds a database or Redis connection; the order stage's one stock row commits one at a time anyway)", name, n, MaxWorkers))
		}
	}
	return errors.Join(errs...)
}
