// Package serve is the project's reference access service: the HTTP front
// of the flash-sale reserve path (docs/SERVICE.md), as a team would deploy
// it in front of the Redis Cluster, so the harness can put a running
// service under test (`seckill-harness serve`).
//
// It speaks the access-service HTTP contract (POST /v1/reserve, GET
// /v1/reserve/{request_id}, POST /v1/release, GET /healthz, GET /metrics)
// on a loopback address, runs the project's reference scripts through
// lua.Store on a hardened go-redis cluster client (lua.NewClusterClient:
// a lost reply is lua.ErrOutcomeUnknown, never silently re-sent) and
// derives the reservation id with the run's secret (lua.ReservationID), so
// its ids equal the harness's.
//
// Degradation (spec §7.6 / §13.1, the table in docs/SERVICE.md): a
// connection failure, a slot without a master, OOM or an open circuit
// answers SYSTEM_BUSY (retryable, the original request_id, nothing
// reserved); a timeout or a lost reply answers OUTCOME_UNKNOWN after at
// most a bounded re-send of the very same call; CROSSSLOT opens the SKU's
// circuit; a redirect or failover is retried a bounded number of times;
// nothing ever bypasses Redis. The local sold-out flag (sut.LocalSoldOut)
// answers SOLD_OUT for a short TTL after Redis said SOLD_OUT.
//
// Defects (defects.go) turn on known-wrong behaviours as negative
// controls: each is small, named in one table and visible from outside in
// the answers or in Redis.
package serve
