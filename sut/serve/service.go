package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Service is one running access service: the cluster client, the
// activities it has met, its circuits and metrics. Make it with New,
// serve Handler (or call Run), Close it.
type Service struct {
	cfg   Config
	rdb   *redis.ClusterClient
	store *lua.Store
	brk   *breakers
	m     *serviceMetrics
	seq   atomic.Int64

	life context.Context // ends at Close: background work stops
	stop context.CancelFunc
	bg   sync.WaitGroup

	mu     sync.Mutex
	acts   map[string]*activity
	flags  []*sut.LocalSoldOut
	closed bool

	pg *pgxpool.Pool // the bypass-to-db defect's database; nil otherwise
}

// New validates cfg (defaults filled in) and makes the service. It does
// not reach the cluster: the client connects on the first request, and
// GET /healthz says when it can.
func New(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opt := &redis.ClusterOptions{Addrs: cfg.RedisAddrs, ContextTimeoutEnabled: true, PoolSize: cfg.PoolSize,
		DialTimeout: cfg.RedisTimeout, ReadTimeout: cfg.RedisTimeout, WriteTimeout: cfg.RedisTimeout, PoolTimeout: cfg.RedisTimeout,
		DialerRetries: 1} // a refused dial is answered SYSTEM_BUSY at once, not after go-redis's five tries
	if cfg.Dialer != nil {
		opt.Dialer = cfg.Dialer
	}
	rdb := lua.NewClusterClient(opt)
	s := &Service{cfg: cfg, rdb: rdb, store: lua.NewStore(rdb, cfg.Scripts, cfg.Secret), brk: newBreakers(),
		m: newServiceMetrics(), acts: map[string]*activity{}}
	s.life, s.stop = context.WithCancel(context.Background())
	if cfg.Defects.Has(DefectBypassToDB) {
		pool, err := pgxpool.New(s.life, cfg.PGURL) // connects on first use
		if err != nil {
			s.stop()
			_ = rdb.Close()
			return nil, fmt.Errorf("--pg: %w", err)
		}
		s.pg = pool
	}
	return s, nil
}

// Config is the service's configuration, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// Close stops background work (compensations of a defect, flag
// subscriptions), closes the flags and the client. Idempotent.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	flags := s.flags
	s.mu.Unlock()
	s.stop()
	s.bg.Wait()
	for _, f := range flags {
		f.Close()
	}
	if s.pg != nil {
		s.pg.Close()
	}
	return s.rdb.Close()
}

// Handler routes the contract's endpoints.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/reserve", s.timed("reserve", s.handleReserve))
	mux.HandleFunc("GET /v1/reserve/{request_id}", s.timed("query", s.handleQuery))
	mux.HandleFunc("POST /v1/release", s.timed("release", s.handleRelease))
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{Registry: s.m.reg}))
	return mux
}

// timed bounds the request by the deadline and records its duration.
func (s *Service) timed(endpoint string, h func(ctx context.Context, w http.ResponseWriter, r *http.Request) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		code := h(ctx, w, r)
		s.m.requests.WithLabelValues(endpoint, code).Inc()
		s.m.duration.WithLabelValues(endpoint).Observe(time.Since(t0).Seconds())
	}
}

// maxBody bounds a request body.
const maxBody = 64 << 10

func (s *Service) handleReserve(ctx context.Context, w http.ResponseWriter, r *http.Request) string {
	var req reserveRequest
	if err := decodeBody(w, r, &req); err != nil {
		a := invalid(req.RequestID, err.Error())
		a.write(w)
		return a.Code
	}
	if err := req.validate(); err != nil {
		a := invalid(req.RequestID, err.Error())
		a.write(w)
		return a.Code
	}
	a := s.reserve(ctx, req)
	a.write(w)
	return a.Code
}

// decodeBody reads a JSON object of at most maxBody bytes into v.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return fmt.Errorf("read the body: %v (at most %d bytes)", err, maxBody)
	}
	if err := jsonUnmarshal(body, v); err != nil {
		return fmt.Errorf("body is not the JSON object of the endpoint: %v", err)
	}
	return nil
}

// handleQuery answers what became of a request, from its cached result.
// A failure never tells the client to submit a new request: 503
// SYSTEM_BUSY (retryable: ask again).
func (s *Service) handleQuery(ctx context.Context, w http.ResponseWriter, r *http.Request) string {
	reqID, q := r.PathValue("request_id"), r.URL.Query()
	req := reserveRequest{RequestID: reqID, ActivityID: q.Get("activity_id"), UserID: q.Get("user_id")}
	if err := req.validate(); err != nil {
		a := invalid(reqID, err.Error())
		a.write(w)
		return a.Code
	}
	a := s.query(ctx, req)
	a.write(w)
	return a.Code
}

func (s *Service) query(ctx context.Context, req reserveRequest) Answer {
	notFound := Answer{Code: CodeNotFound, RequestID: req.RequestID, status: http.StatusNotFound}
	act, err := s.activityOf(ctx, req.ActivityID)
	if errors.Is(err, errNoActivity) {
		notFound.Message = err.Error()
		return notFound
	}
	if err != nil {
		return busy(req.RequestID, "cannot read the activity from Redis: "+err.Error())
	}
	b := act.a.BucketOf(req.UserID)
	res, found, err := s.store.LookupRequest(ctx, act.a.Scope(b), req.RequestID)
	switch {
	case err != nil:
		return busy(req.RequestID, "cannot read the request's result: "+err.Error())
	case !found:
		return notFound
	case res.UserID != req.UserID:
		// Another user's request_id: say so without its reservation.
		return business(req.RequestID, lua.RequestIDConflict, "", b)
	case s.cfg.Defects.Has(DefectQueryHidesReleased) && res.Code == lua.Accepted:
		r, ok, err := s.store.ReadReservation(ctx, act.a.Scope(b), res.ReservationID)
		if err != nil {
			return busy(req.RequestID, "cannot read the reservation: "+err.Error())
		}
		if ok && r.Status == lua.StatusReleased {
			return notFound // the defect: a released reservation reads as never run
		}
	}
	return business(req.RequestID, res.Code, res.ReservationID, b)
}

// releaseRequest is the body of POST /v1/release.
type releaseRequest struct {
	ActivityID    string `json:"activity_id"`
	UserID        string `json:"user_id"`
	ReservationID string `json:"reservation_id"`
}

// handleRelease fences and compensates one reservation
// (sut.FenceAndCompensate); the answer's code is compensate.lua's.
func (s *Service) handleRelease(ctx context.Context, w http.ResponseWriter, r *http.Request) string {
	var req releaseRequest
	err := decodeBody(w, r, &req)
	for _, f := range []struct{ name, v string }{{"reservation_id", req.ReservationID}, {"activity_id", req.ActivityID}, {"user_id", req.UserID}} {
		if err == nil {
			err = lua.ValidateID(f.name, f.v)
		}
	}
	a := ReleaseAnswer{ReservationID: req.ReservationID}
	status := http.StatusOK
	if err != nil {
		a.Code, a.Message, status = CodeInvalid, err.Error(), http.StatusBadRequest
	} else {
		a, status = s.release(ctx, req)
	}
	writeJSON(w, status, a)
	return a.Code
}

func (s *Service) release(ctx context.Context, req releaseRequest) (ReleaseAnswer, int) {
	a := ReleaseAnswer{ReservationID: req.ReservationID}
	act, err := s.activityOf(ctx, req.ActivityID)
	if errors.Is(err, errNoActivity) {
		a.Code, a.Message = lua.CompensateNotFound.String(), err.Error()
		return a, http.StatusOK
	}
	if err == nil {
		var res lua.CompensateResult
		res, err = sut.FenceAndCompensate(ctx, s.store, act.a.Scope(act.a.BucketOf(req.UserID)), req.UserID, req.ReservationID)
		if err == nil {
			a.Code, a.Status = res.Code.String(), res.Status
			return a, http.StatusOK
		}
	}
	a.Retryable, a.Message = true, err.Error()
	if classify(err) == failUnknown {
		a.Code = CodeOutcomeUnknown // the release may have run; re-sending it is safe (at most once)
		return a, http.StatusGatewayTimeout
	}
	a.Code = CodeSystemBusy
	return a, http.StatusServiceUnavailable
}

// handleHealth is readiness: 200 when a node of the cluster answers
// CLUSTER INFO with cluster_state:ok, 503 otherwise.
func (s *Service) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	info, err := s.rdb.ClusterInfo(ctx).Result()
	if err == nil && !strings.Contains(info, "cluster_state:ok") {
		err = errors.New("the cluster says cluster_state is not ok")
	}
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Run serves s on cfg.Listen until ctx ends, then shuts the server down
// (in-flight requests get up to a deadline to finish) and closes s.
// ready, if not nil, is called with the bound address once it listens.
func Run(ctx context.Context, s *Service, ready func(addr string)) error {
	defer s.Close()
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (choose a free port)", s.cfg.Listen, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 90 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-done:
		return fmt.Errorf("serve on %s: %w", s.cfg.Listen, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout+time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	return nil
}
