package serve

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// errNoActivity: bucket 0's meta of the activity does not exist.
var errNoActivity = errors.New("no such activity")

// activity is what the service knows of one activity: its shape, found
// in Redis once (the bucket count is the number of consecutive buckets
// whose meta exists, from 0; an activity is never re-shaped in place), its
// local sold-out flag and, for the fail-open defect, the last remaining
// stock Redis reported per bucket.
type activity struct {
	a    *lua.Activity
	flag atomic.Pointer[sut.LocalSoldOut]
	// flagRetry is when a failed flag subscription may be tried again
	// (Unix ns); flagBusy: one is being made.
	flagRetry atomic.Int64
	flagBusy  atomic.Bool
	left      []atomic.Int64 // per bucket: last remaining seen, -1 unknown
}

// discoverBatch is how many bucket metas one round of discovery asks for.
const discoverBatch = 64

// activityOf returns the activity id, discovering it on first use. A
// Redis failure is returned as is (classify sorts it); an activity whose
// bucket 0 has no meta is errNoActivity and is not remembered.
func (s *Service) activityOf(ctx context.Context, id string) (*activity, error) {
	s.mu.Lock()
	act := s.acts[id]
	s.mu.Unlock()
	if act != nil {
		return act, nil
	}
	a, err := s.discover(ctx, id)
	if err != nil {
		return nil, err
	}
	act = &activity{a: a, left: make([]atomic.Int64, a.Buckets)}
	for i := range act.left {
		act.left[i].Store(-1)
	}
	s.mu.Lock()
	if old := s.acts[id]; old != nil {
		act = old
	} else {
		s.acts[id] = act
	}
	s.mu.Unlock()
	return act, nil
}

// discover reads bucket 0's schema version and counts the buckets.
func (s *Service) discover(ctx context.Context, id string) (*lua.Activity, error) {
	a := &lua.Activity{ID: id, SKU: s.cfg.SKU, Version: s.cfg.Version, State: lua.StateActive}
	schema, err := s.rdb.HGet(ctx, a.Scope(0).MetaKey(), "schema_version").Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("activity %s (sku %s, version %d): %w", id, a.SKU, a.Version, errNoActivity)
	}
	if err != nil {
		return nil, err
	}
	a.SchemaVersion = schema
	for base := uint32(1); base < lua.MaxBuckets; base += discoverBatch {
		cmds := make([]*redis.IntCmd, 0, discoverBatch)
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for b := base; b < base+discoverBatch && b < lua.MaxBuckets; b++ {
				cmds = append(cmds, p.Exists(ctx, a.Scope(b).MetaKey()))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i, c := range cmds {
			if c.Val() == 0 {
				a.Buckets = base + uint32(i)
				return a, nil
			}
		}
	}
	a.Buckets = lua.MaxBuckets
	return a, nil
}

// soldOutFlag is the activity's local sold-out flag, or nil while it has
// none yet: it is made in the background (a Pub/Sub subscription), tried
// again a second after a failure, and closed with the service.
func (s *Service) soldOutFlag(act *activity) *sut.LocalSoldOut {
	if s.cfg.SoldOutTTL < 0 {
		return nil
	}
	if f := act.flag.Load(); f != nil {
		return f
	}
	if time.Now().UnixNano() < act.flagRetry.Load() || !act.flagBusy.CompareAndSwap(false, true) {
		return nil
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer act.flagBusy.Store(false)
		ctx, cancel := context.WithTimeout(s.life, 5*time.Second)
		defer cancel()
		f, err := sut.NewLocalSoldOut(ctx, s.rdb, act.a, pathSystem{s, act}, sut.LocalSoldOutConfig{TTL: s.cfg.SoldOutTTL, Instances: 1})
		if err != nil {
			act.flagRetry.Store(time.Now().Add(time.Second).UnixNano())
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			f.Close()
			return
		}
		s.flags = append(s.flags, f)
		act.flag.Store(f)
	}()
	return nil
}

// pathSystem is the service's bounded send as a sut.System, the inner
// path of the local sold-out flag.
type pathSystem struct {
	s   *Service
	act *activity
}

func (p pathSystem) Name() string { return "serve" }

func (p pathSystem) Reserve(ctx context.Context, call lua.ReserveCall) (lua.ReserveResult, error) {
	return p.s.sendBounded(ctx, p.act, call)
}

func (p pathSystem) Resend(call lua.ReserveCall, _ int) lua.ReserveCall { return call }

func (p pathSystem) Release(ctx context.Context, sc lua.Scope, userID, rid string) (lua.CompensateResult, error) {
	return sut.FenceAndCompensate(ctx, p.s.store, sc, userID, rid)
}
