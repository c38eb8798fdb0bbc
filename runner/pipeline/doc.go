// Package pipeline runs the asynchronous half of the reserve path in the
// background of a load run, against the real cluster, and records what it
// did for the P-checks (runner.VerifyPipeline):
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
//   - an order service consumes the MQ. The order DB has a unique index on
//     message_id: a duplicate never makes a second order. It fences the
//     reservation in Redis before writing its decision: SEND_UNKNOWN (or
//     RESERVED, when the message beat the dispatcher's own transition) ->
//     ENQUEUED, then ENQUEUED -> ORDER_CREATED or REJECTED (Config.Order.Reject,
//     drawn per message_id). When the fence is refused (the reservation was
//     released meanwhile) no order is written.
//   - a release stage: REJECTED -> RELEASE_PENDING -> compensate.lua.
//   - an expiry checker per bucket over reservation_expiry (ZRANGEBYSCORE -inf
//     now LIMIT off N) that never releases directly: RESERVED / SEND_UNKNOWN /
//     ENQUEUED are released only when the order DB has no order for the
//     message_id and the MQ holds no copy of it, and only through
//     RELEASE_PENDING; REJECTED and RELEASE_PENDING leftovers are finished.
//
// Every script call of every stage is in the event log with its answer,
// with every send, delivery and order row (Evidence). Defects turn on known
// broken behaviours (negative controls) so the checks can be shown to fail.
//
// Lifecycle: New, Start (with the load), optionally StopDispatcher /
// StartDispatcher (the dispatcher-crash fault), Drain after the load (until
// every reservation is ORDER_CREATED or RELEASED, or a timeout), Stop, then
// Evidence for the checks. The pipeline reads Redis only through keys it can
// name: the two zsets of each bucket and the records they list.
package pipeline
