package badpaths

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/sut"
	"seckill-harness/sut/httpsut"
	"seckill-harness/sut/serve"
)

// Names of the service rows: the reference access service (sut/serve,
// `seckill-harness serve`) started in-process for the run, reached over
// HTTP through the contract's mapping (sut/httpsut), with one of its
// defects on (serve.Defects); ServiceReference is the same service with
// none, the matrix's control under their loads.
const (
	ServiceReference            = "serve"
	ServeNewRequestIDOnTimeout  = "serve:" + string(serve.DefectNewRequestIDOnTimeout)
	ServeFailOpen               = "serve:" + string(serve.DefectFailOpen)
	ServeTimeoutIsFailure       = "serve:" + string(serve.DefectTimeoutIsFailure)
	ServeRetryWithoutIDs        = "serve:" + string(serve.DefectRetryWithoutIDs)
	ServeQueryHidesReleased     = "serve:" + string(serve.DefectQueryHidesReleased)
	serviceRedisTimeout         = 200 * time.Millisecond // serve --redis-timeout: the latency load's toxic is beyond it
	serviceTimeout              = 800 * time.Millisecond // serve --timeout
	serviceBreakerHold          = 300 * time.Millisecond // serve's node circuit after a timeout
	serviceWorkers              = 64                     // idle keep-alive connections kept by the HTTP client
	serviceSource               = "docs/SERVICE.md (the reference service's defects); spec §7.4, §13.1"
	serviceStopTimeout          = 10 * time.Second
	serviceReferenceDescription = "the reference access service (seckill-harness serve, no defect) started in-process for the run, Redis through the stand's proxies, reached over HTTP with the contract's mapping (state: reference)"
)

// serviceReferenceInfo is the matrix's control of the service rows.
var serviceReferenceInfo = Info{Name: ServiceReference, Description: serviceReferenceDescription,
	Source: serviceSource, System: newServicePath(ServiceReference)}

// ServiceReferenceInfo is the reference service as a matrix path (the
// Reference of every service row).
func ServiceReferenceInfo() Info { return serviceReferenceInfo }

// defectDoes is what defect d does wrong (serve.Defects, the one table).
func defectDoes(d serve.Defect) string {
	for _, x := range serve.Defects {
		if x.Name == d {
			return "the reference service with --defect " + string(d) + ": " + x.Does
		}
	}
	panic("badpaths: unknown serve defect " + string(d))
}

// newServicePath builds the service row name with defects on as a run's
// system under test: nothing starts until Setup.
func newServicePath(name string, defects ...serve.Defect) func(st *lua.Store) sut.System {
	return func(st *lua.Store) sut.System {
		set := serve.DefectSet{}
		for _, d := range defects {
			set[d] = true
		}
		return &ServicePath{name: name, defects: set, st: st}
	}
}

// ServicePath is an in-process reference service (serve.Service) as the
// system under test of one run: Setup starts it on a free 127.0.0.1 port,
// its Redis client on the run's cluster through the same dialer as the
// run's store (the stand's proxies, so the load's faults reach it) with
// the run's secret, then sets the activity up through it; every call goes
// over HTTP (httpsut.System, the contract's mapping with state:
// reference, which it unwraps to for the checks' abilities). Close stops
// the service and waits for it (the lifecycle closes the run's system
// when the run ends); it leaves nothing running.
type ServicePath struct {
	name    string
	defects serve.DefectSet
	st      *lua.Store

	mu   sync.Mutex
	sys  *httpsut.System
	stop context.CancelFunc
	done chan error
}

var (
	_ sut.System      = (*ServicePath)(nil)
	_ sut.Provisioner = (*ServicePath)(nil)
	_ sut.Wrapper     = (*ServicePath)(nil)
)

// Name is the row's name.
func (p *ServicePath) Name() string { return p.name }

// Unwrap is the HTTP system once started (nil before Setup).
func (p *ServicePath) Unwrap() sut.System {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sys == nil {
		return nil
	}
	return p.sys
}

func (p *ServicePath) http() (*httpsut.System, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sys == nil {
		return nil, fmt.Errorf("%s: the service is not started (Setup)", p.name)
	}
	return p.sys, nil
}

// Reserve sends the reserve over HTTP.
func (p *ServicePath) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	s, err := p.http()
	if err != nil {
		return lua.ReserveResult{}, err
	}
	return s.Reserve(ctx, call)
}

// Resend is the HTTP system's: the same request.
func (p *ServicePath) Resend(call lua.ReserveCall, send int) lua.ReserveCall {
	if s, err := p.http(); err == nil {
		return s.Resend(call, send)
	}
	return call
}

// Release sends the release over HTTP.
func (p *ServicePath) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	s, err := p.http()
	if err != nil {
		return lua.CompensateResult{}, err
	}
	return s.Release(ctx, sc, userID, rid)
}

// Setup starts the service, then writes the activity's keys (state: reference).
func (p *ServicePath) Setup(ctx context.Context, a *lua.Activity) error {
	if err := p.start(ctx); err != nil {
		return err
	}
	s, err := p.http()
	if err != nil {
		return err
	}
	return s.Setup(ctx, a)
}

// Teardown removes the activity's keys (the service keeps running until Close).
func (p *ServicePath) Teardown(ctx context.Context, a *lua.Activity) (int64, error) {
	s, err := p.http()
	if err != nil {
		return 0, err
	}
	return s.Teardown(ctx, a)
}

// start runs the service until Close, on the store's cluster and dialer
// with the store's secret.
func (p *ServicePath) start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sys != nil {
		return fmt.Errorf("%s: the service is already started", p.name)
	}
	cc, ok := p.st.Client().(*redis.ClusterClient)
	if !ok {
		return fmt.Errorf("%s: the in-process service needs the run's Redis Cluster client, got %T", p.name, p.st.Client())
	}
	o := cc.Options()
	cfg := serve.Config{Listen: "127.0.0.1:0", RedisAddrs: o.Addrs, Dialer: o.Dialer, Secret: p.st.Secret(),
		Timeout: serviceTimeout, RedisTimeout: serviceRedisTimeout, BreakerHold: serviceBreakerHold, SoldOutTTL: -1, Defects: p.defects}
	svc, err := serve.New(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	sctx, stop := context.WithCancel(context.Background())
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- serve.Run(sctx, svc, func(a string) { addr <- a }) }()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a
	case err := <-done:
		stop()
		return fmt.Errorf("%s: the service did not start: %w", p.name, err)
	case <-ctx.Done():
		stop()
		<-done
		return ctx.Err()
	}
	m := httpsut.DefaultMapping()
	m.Name, m.State = p.name, "reference"
	sys, err := httpsut.New(url, m, serviceWorkers, p.st)
	if err != nil {
		stop()
		<-done
		return err
	}
	p.sys, p.stop, p.done = sys, stop, done
	return nil
}

// Close stops the service (in-flight requests get its deadline to finish)
// and waits until it has; idempotent, and a no-op before Setup.
func (p *ServicePath) Close() error {
	p.mu.Lock()
	stop, done, sys := p.stop, p.done, p.sys
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop == nil {
		return nil
	}
	sys.Close()
	stop()
	select {
	case err := <-done:
		return err
	case <-time.After(serviceTimeout + serviceStopTimeout):
		return errors.New(p.name + ": the service did not stop")
	}
}
