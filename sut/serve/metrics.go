package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"seckill-harness/lua"
)

// serviceMetrics are the service's own Prometheus metrics (GET /metrics),
// on a registry of its own. Names (a contract):
//
//	reserve_lua_rc_total{code}          reserve.lua answers by return code name, one per send that got one
//	redis_outcome_unknown_total         script sends whose reply was lost (timeout, cut connection)
//	redis_call_errors_total{kind}       other failed sends by the degradation table's kind (connection, clusterdown, oom, crossslot, redirect, redis_error)
//	serve_requests_total{endpoint,code} answers by endpoint and answer code
//	serve_request_duration_seconds{endpoint} histogram: request received to answer written
//	serve_redis_call_seconds            histogram: one reserve.lua send
//	serve_circuit_open_total            requests answered SYSTEM_BUSY by an open circuit without asking Redis
//	serve_local_soldout_total           requests answered SOLD_OUT by the local sold-out flag
//	serve_fail_open_total               answers of the fail-open defect (0 unless it is on)
type serviceMetrics struct {
	reg                                  *prometheus.Registry
	rc, callErrors, requests             *prometheus.CounterVec
	unknown                              prometheus.Counter
	answeredOpen, localSoldOut, failOpen prometheus.Counter
	duration                             *prometheus.HistogramVec
	redisCall                            prometheus.Histogram
}

func newServiceMetrics() *serviceMetrics {
	reg := prometheus.NewRegistry()
	m := &serviceMetrics{reg: reg,
		rc:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reserve_lua_rc_total", Help: "reserve.lua answers by return code name"}, []string{"code"}),
		callErrors:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redis_call_errors_total", Help: "failed reserve sends by kind (outcome unknown excluded)"}, []string{"kind"}),
		requests:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "serve_requests_total", Help: "answers by endpoint and code"}, []string{"endpoint", "code"}),
		unknown:      prometheus.NewCounter(prometheus.CounterOpts{Name: "redis_outcome_unknown_total", Help: "reserve sends whose reply was lost"}),
		answeredOpen: prometheus.NewCounter(prometheus.CounterOpts{Name: "serve_circuit_open_total", Help: "requests answered SYSTEM_BUSY by an open circuit"}),
		localSoldOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "serve_local_soldout_total", Help: "requests answered SOLD_OUT by the local flag"}),
		failOpen:     prometheus.NewCounter(prometheus.CounterOpts{Name: "serve_fail_open_total", Help: "answers of the fail-open defect"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "serve_request_duration_seconds", Help: "request received to answer written",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"endpoint"}),
		redisCall: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "serve_redis_call_seconds", Help: "one reserve.lua send",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14)}),
	}
	reg.MustRegister(m.rc, m.callErrors, m.requests, m.unknown, m.answeredOpen, m.localSoldOut, m.failOpen, m.duration, m.redisCall)
	return m
}

// count records one send's result.
func (m *serviceMetrics) count(res lua.ReserveResult, f failure) {
	switch f {
	case failNone:
		m.rc.WithLabelValues(res.Code.String()).Inc()
	case failUnknown:
		m.unknown.Inc()
	default:
		m.callErrors.WithLabelValues(f.String()).Inc()
	}
}
