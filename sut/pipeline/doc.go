// Package pipeline runs the asynchronous half of the reserve path in the
// background of a load run, against the real cluster, and records what it
// did for the P-checks (checks, through checks.Judge):
//
//   - a dispatcher per bucket takes due members of send_pending
//     (ZRANGEBYSCORE key -inf now LIMIT 0 N — never a scan), sends each with
//     its fixed message_id (lua.MessageID(rid), read from the resv record) to
//     a simulated MQ whose outcome per send is drawn from a seed (ack, error,
//     timeout = unknown; a timed-out message may still have been stored), and
//     records the outcome with transition.lua: RESERVED -> ENQUEUED on ack,
//     -> SEND_UNKNOWN with next_retry_at_ms otherwise. SEND_UNKNOWN comes due
//     again and is re-sent with the SAME message_id: the MQ may then hold
//     duplicates, and it records every send and every delivery.
//   - an order service consumes the MQ and writes to PostgreSQL (Orders,
//     Config.Orders): one transaction per message — the inbox row keyed by
//     message_id (a duplicate delivery is dropped), then, unless the
//     business rejects it (Config.Order.Reject, drawn per message_id), the
//     conditional stock decrement (UPDATE stock SET sold = sold + 1 WHERE …
//     AND sold < total), the order row (unique: one CREATED order per user
//     and activity, one per reservation, one per message) and a ledger row,
//     under a savepoint. The decision (created, no_stock,
//     user_already_ordered, duplicate_reservation, rejected) drives the Redis
//     fence while the transaction is open: SEND_UNKNOWN (or RESERVED, when
//     the message beat the dispatcher's own transition) -> ENQUEUED, then
//     ENQUEUED -> ORDER_CREATED or REJECTED. A refused fence (the reservation
//     was released meanwhile) rolls the decision back and commits "refused":
//     no order, no unit taken. A database or Redis error rolls everything
//     back and the message comes again (a fence that ran before a failed
//     commit answers IDEMPOTENT on the retry).
//   - a release stage: REJECTED -> RELEASE_PENDING -> compensate.lua.
//   - an expiry checker per bucket over reservation_expiry (ZRANGEBYSCORE -inf
//     now LIMIT off N) that never releases directly: RESERVED / SEND_UNKNOWN /
//     ENQUEUED are released only when the inbox has no decision (other than
//     "refused") for the message_id and the MQ holds no copy of it, and only
//     through RELEASE_PENDING; REJECTED and RELEASE_PENDING leftovers are
//     finished.
//   - a reconciliation stage (Reconciliation) comparing Redis reservations
//     with PostgreSQL orders during the load and once after the drain
//     (Pipeline.Reconcile), classifying every divergence.
//
// Every script call of every stage is in the event log with its answer,
// with every send, delivery and order row (Evidence). Defects turn on known
// broken behaviours (negative controls) so the checks can be shown to fail.
//
// Lifecycle: OpenOrders (on a compose.PostgresDB pool), New with
// Config.Orders, Start (with the load), optionally StopDispatcher /
// StartDispatcher (the dispatcher-crash fault), Drain after the load (until
// every reservation is ORDER_CREATED or RELEASED, or a timeout), Reconcile,
// Stop, then Evidence for the checks (and Orders.Facts for the end-to-end checks). The pipeline reads Redis only through keys it can
// name: the two zsets of each bucket and the records they list.
package pipeline
