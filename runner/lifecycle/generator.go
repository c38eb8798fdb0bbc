package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/history"
	"seckill-harness/internal/boundedread"
	"seckill-harness/internal/fileref"
	"seckill-harness/lua"
	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/sut"
)

// Load from several machines (--generator I/N --activity NAME).
//
// Every generator runs against one existing cluster and one activity NAME.
// Generator 0 claims the activity in its registry hash (HSETNX, atomic),
// sets it up and marks the registry ready with the split's spec (N, seed,
// users, stock, buckets). The others wait (bounded by --activity-wait) for
// "ready", refuse a spec that differs from generator 0's, read the window
// back from the activity's meta so all agree, and claim their index (a
// second process with the same I is refused: it would replay the first
// one's ids). Each marks its index done once its report is written.
// Nobody tears the activity down: 'seckill-harness verify' judges the
// invariants over every generator's history against it (and removes it with --teardown);
// otherwise its keys expire at retention_until_ms.

// GenInfoFile is the sidecar a run on a named activity writes into --out:
// what 'verify' needs to find the activity, the history and the registry.
const GenInfoFile = "generator.json"

// GenInfo is the content of generator.json.
type GenInfo struct {
	Activity  string `json:"activity"`
	SKU       string `json:"sku"`
	Generator string `json:"generator"` // "I/N"
	Index     int    `json:"index"`
	Count     int    `json:"count"`
	Spec      string `json:"spec"`  // the split's spec, as in the registry
	Seed      int64  `json:"seed"`  // keys the reservation ids (the store's secret)
	Users     int    `json:"users"` // total over every generator
	Stock     int64  `json:"stock"`
	Buckets   uint32 `json:"buckets"`
	Token     string `json:"token"`   // this process's claim in the registry
	History   string `json:"history"` // relative to the run directory unless absolute
	Cluster   string `json:"cluster"` // redacted
}

// HistoryPath is the history the generator.json in dir names, resolved
// through fileref like every path written in a file: relative to dir, and
// refused (naming the fix, quoting nothing of the file it names) when it
// leaves dir or --files-root, lexically or through a symlink, or is not a
// regular file.
func (g *GenInfo) HistoryPath(dir string) (string, error) {
	if g.History == "" {
		return "", fmt.Errorf("%s: %s names no history", dir, GenInfoFile)
	}
	path, err := fileref.Resolve(filepath.Join(dir, GenInfoFile), g.History)
	if err != nil {
		return "", fmt.Errorf("%s history: %w", GenInfoFile, err)
	}
	return path, nil
}

func (g *GenInfo) Gen() history.Generator { return history.Generator{Index: g.Index, Count: g.Count} }

// splitSpec is what every generator of one activity must agree on.
func splitSpec(gen history.Generator, seed int64, users int, stock int64, buckets uint32) string {
	return fmt.Sprintf("generators=%d seed=%d users=%d stock=%d buckets=%d", gen.N(), seed, users, stock, buckets)
}

// RegistryKey is the activity's generator registry hash (bucket 0's slot).
func RegistryKey(a *lua.Activity) string { return a.Scope(0).Key("harness_generators") }

func genToken() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%d", host, os.Getpid(), time.Now().UnixMilli())
}

// joinActivity sets the named activity up through the system under test's
// Provisioner (generator 0) or joins it (the others), as described above,
// and returns the activity every generator agrees on and this run's
// generator.json (History still to fill in).
func joinActivity(ctx context.Context, log *slog.Logger, rdb redis.UniversalClient, pv sut.Provisioner, want *lua.Activity, gen history.Generator, activityWait time.Duration, cfg runner.Config) (*lua.Activity, *GenInfo, error) {

	spec := splitSpec(gen, cfg.Seed, cfg.Users, want.Stock, want.Buckets)
	gi := &GenInfo{Activity: want.ID, SKU: want.SKU, Generator: gen.String(), Index: gen.Index, Count: gen.N(), Spec: spec,
		Seed: cfg.Seed, Users: cfg.Users, Stock: want.Stock, Buckets: want.Buckets, Token: genToken()}
	key := RegistryKey(want)
	field := "gen:" + strconv.Itoa(gen.Index)
	if gen.Index == 0 {
		ok, err := rdb.HSetNX(ctx, key, field, gi.Token).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("activity %s: claim generator 0: %w", want.ID, err)
		}
		if !ok {
			prev, _ := rdb.HGet(ctx, key, field).Result()
			return nil, nil, fmt.Errorf("activity %s already has a generator 0 (%s): every split load needs a new --activity", want.ID, prev)
		}
		if err := rdb.PExpireAt(ctx, key, time.UnixMilli(want.RetentionUntilMs)).Err(); err != nil {
			return nil, nil, fmt.Errorf("activity %s: registry: %w", want.ID, err)
		}
		if err := pv.Setup(ctx, want); err != nil {
			if errors.Is(err, lua.ErrActivityExists) {
				return nil, nil, fmt.Errorf("%w: pick a new --activity (an old one's keys expire at its retention_until_ms, or 'seckill-harness verify --teardown' removes them)", err)
			}
			return nil, nil, err
		}
		if err := rdb.HSet(ctx, key, "spec", spec, "ready", "1").Err(); err != nil {
			return nil, nil, fmt.Errorf("activity %s: registry: %w", want.ID, err)
		}
		log.Info(fmt.Sprintf("activity %s: set up by generator %s (%s)", want.ID, gen, spec))
		return want, gi, nil
	}

	wait := activityWait
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	deadline := time.Now().Add(wait)
	log.Info(fmt.Sprintf("activity %s: generator %s waiting up to %s for generator 0 to set it up", want.ID, gen, wait))
	for {
		v, err := rdb.HMGet(ctx, key, "ready", "spec").Result()
		if err != nil {
			return nil, nil, fmt.Errorf("activity %s: read the registry: %w", want.ID, err)
		}
		if v[0] != nil {
			if got, _ := v[1].(string); got != spec {
				return nil, nil, fmt.Errorf("generator %s runs %s, but generator 0 set activity %s up with %s: every generator needs the same N, --seed, --users, --stock and --buckets", gen, spec, want.ID, got)
			}
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("activity %s was not set up by generator 0/%d within %s: start generator 0 against the same --cluster, or raise --activity-wait", want.ID, gen.N(), wait)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	a, err := ReadActivity(ctx, rdb, want.ID, want.SKU, want.Buckets, want.Stock)
	if err != nil {
		return nil, nil, err
	}
	ok, err := rdb.HSetNX(ctx, key, field, gi.Token).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("activity %s: claim generator %s: %w", a.ID, gen, err)
	}
	if !ok {
		prev, _ := rdb.HGet(ctx, key, field).Result()
		return nil, nil, fmt.Errorf("generator %s already ran against activity %s (%s): each index runs once per activity, or two processes would send the same ids", gen, a.ID, prev)
	}
	log.Info(fmt.Sprintf("activity %s: joined as generator %s (window read back from its meta)", a.ID, gen))
	return a, gi, nil
}

// ReadActivity reads an activity back from its meta: the window, state and
// version as generator 0 wrote them. Every bucket's meta must exist.
func ReadActivity(ctx context.Context, rdb redis.UniversalClient, id, sku string, buckets uint32, stock int64) (*lua.Activity, error) {
	a := &lua.Activity{ID: id, SKU: sku, Version: 1, Buckets: buckets, Stock: stock}
	v, err := rdb.HMGet(ctx, a.Scope(0).MetaKey(), "sku_id", "version", "state", "starts_at_ms", "ends_at_ms", "retention_until_ms", "schema_version").Result()
	if err != nil {
		return nil, fmt.Errorf("activity %s: read meta: %w", id, err)
	}
	s := make([]string, len(v))
	for i, x := range v {
		if x == nil {
			return nil, fmt.Errorf("activity %s has no meta on this cluster (never set up, torn down, or expired at its retention_until_ms; or another --cluster)", id)
		}
		s[i], _ = x.(string)
	}
	n := make([]int64, 4)
	for i, f := range []string{s[1], s[3], s[4], s[5]} {
		if n[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return nil, fmt.Errorf("activity %s: meta holds %q: %w", id, f, err)
		}
	}
	if s[0] != sku {
		return nil, fmt.Errorf("activity %s is of SKU %s, not %s", id, s[0], sku)
	}
	a.Version, a.State, a.StartsAtMs, a.EndsAtMs, a.RetentionUntilMs, a.SchemaVersion = n[0], lua.ActivityState(s[2]), n[1], n[2], n[3], s[6]
	for b := uint32(1); b <= buckets; b++ {
		sc := a.Scope(b)
		e, err := rdb.Exists(ctx, sc.MetaKey()).Result()
		if err != nil {
			return nil, fmt.Errorf("activity %s: read meta: %w", id, err)
		}
		if b < buckets && e == 0 {
			return nil, fmt.Errorf("activity %s has no bucket %d: it was set up with fewer than %d buckets", id, b, buckets)
		}
		if b == buckets && e > 0 {
			return nil, fmt.Errorf("activity %s has a bucket %d: it was set up with more than %d buckets", id, b, buckets)
		}
	}
	return a, a.Validate()
}

// markDone records in the registry that this generator's run is complete
// (its report and history are written).
func markDone(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, gi *GenInfo) error {
	return rdb.HSet(ctx, RegistryKey(a), "done:"+strconv.Itoa(gi.Index), gi.Token).Err()
}

func writeGenInfo(dir string, gi *GenInfo) error {
	b, err := json.MarshalIndent(gi, "", "  ")
	if err != nil {
		return err
	}
	return reports.WriteFileAtomic(filepath.Join(dir, GenInfoFile), append(b, '\n'))
}

func ReadGenInfo(dir string) (*GenInfo, error) {
	path := filepath.Join(dir, GenInfoFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: only runs with --activity (and --generator) can be verified against the cluster", dir, GenInfoFile)
	}
	b, err := boundedread.File(path, boundedread.MiB, GenInfoFile, "give the directory a generator run (--generator I/N) wrote")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no %s: only runs with --activity (and --generator) can be verified against the cluster", dir, GenInfoFile)
		}
		return nil, err
	}
	var gi GenInfo
	if err := json.Unmarshal(b, &gi); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, GenInfoFile), err)
	}
	return &gi, nil
}
