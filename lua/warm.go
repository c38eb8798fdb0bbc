package lua

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterWarmth is what a warm-up left ready on one master, as the load's
// client sees it (through its proxy when it has one).
type MasterWarmth struct {
	Addr string `json:"addr"`
	// Conns is the number of connections open in the client's pool to this
	// master (go-redis PoolStats.TotalConns) when the warm-up ended.
	Conns int `json:"conns"`
	// Scripts lists the SHA1s SCRIPT EXISTS confirmed cached on the master.
	Scripts []string `json:"scripts"`
}

// DialConns opens, on every master rdb knows, `conns` connections of rdb's
// own pool (capped at the pool size) and loads every script of scripts
// there with SCRIPT LOAD, all through rdb (its dialer, so its proxies, its
// credentials): the load that follows neither dials nor meets NOSCRIPT.
// The cluster's slot map is loaded first. Connections are dialled by
// holding `conns` of them at once (a PING on each), then returned to the
// pool, which keeps idle connections (MaxIdleConns 0: no limit). A PING
// through rdb then loads go-redis's command table (fetched with COMMAND
// on a cluster client's first command). It returns what CheckWarm then
// sees.
func DialConns(ctx context.Context, rdb *redis.ClusterClient, scripts *Scripts, conns int) ([]MasterWarmth, error) {
	if scripts == nil {
		scripts = Embedded()
	}
	if conns < 1 {
		return nil, fmt.Errorf("warm-up: want at least one connection per master, got %d", conns)
	}
	rdb.ReloadState(ctx)
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		addr := node.Options().Addr
		n := min(conns, node.Options().PoolSize)
		held := make([]*redis.Conn, 0, n)
		defer func() {
			for _, c := range held {
				_ = c.Close() // back to the pool, still open
			}
		}()
		for i := 0; i < n; i++ {
			c := node.Conn()
			held = append(held, c)
			if err := c.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("warm-up: dial connection %d of %d to master %s: %w", i+1, n, addr, err)
			}
		}
		for _, s := range scripts.all() {
			// On a held connection: the pool may have none left to lend.
			sha, err := held[0].ScriptLoad(ctx, s.Source).Result()
			if err != nil {
				return fmt.Errorf("warm-up: SCRIPT LOAD %s on master %s: %w", s.Name, addr, err)
			}
			if sha != s.SHA1 {
				return fmt.Errorf("warm-up: master %s cached %s as %s, want %s", addr, s.Name, sha, s.SHA1)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The cluster client fetches the command table (COMMAND: a reply of
	// hundreds of KB, parsed once) on its first command of its own; every
	// call that arrives meanwhile waits for it. One PING through it loads
	// the table here, not on the load's first operation.
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("warm-up: PING through the cluster client (loads its command table): %w", err)
	}
	return Warmth(ctx, rdb, scripts)
}

// Warmth reads, for every master rdb knows, the connections open in rdb's
// pool to it and which of scripts' SHA1s it has cached (SCRIPT EXISTS),
// sorted by address.
func Warmth(ctx context.Context, rdb *redis.ClusterClient, scripts *Scripts) ([]MasterWarmth, error) {
	if scripts == nil {
		scripts = Embedded()
	}
	var mu sync.Mutex
	var out []MasterWarmth
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		w := MasterWarmth{Addr: node.Options().Addr, Conns: int(node.PoolStats().TotalConns)}
		var shas []string
		for _, s := range scripts.all() {
			shas = append(shas, s.SHA1)
		}
		exists, err := node.ScriptExists(ctx, shas...).Result()
		if err != nil {
			return fmt.Errorf("SCRIPT EXISTS on master %s: %w", w.Addr, err)
		}
		for i, ok := range exists {
			if ok {
				w.Scripts = append(w.Scripts, shas[i])
			}
		}
		mu.Lock()
		out = append(out, w)
		mu.Unlock()
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, err
}

// CheckWarm returns nil when every master of rdb has at least `conns`
// connections (capped at the pool size) open in rdb's pool and every
// script of scripts cached; otherwise an error naming each master that
// is not ready and what it lacks.
func CheckWarm(ctx context.Context, rdb *redis.ClusterClient, scripts *Scripts, conns int) error {
	if scripts == nil {
		scripts = Embedded()
	}
	ws, err := Warmth(ctx, rdb, scripts)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return errors.New("not warm: the client knows no master")
	}
	want := min(conns, rdb.Options().PoolSize)
	var errs []error
	for _, w := range ws {
		if w.Conns < want {
			errs = append(errs, fmt.Errorf("master %s: %d connections open, want %d", w.Addr, w.Conns, want))
		}
		if len(w.Scripts) != len(scripts.all()) {
			errs = append(errs, fmt.Errorf("master %s: %d of %d scripts cached", w.Addr, len(w.Scripts), len(scripts.all())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("not warm: %w", err)
	}
	return nil
}

// all lists the three scripts.
func (s *Scripts) all() []*Script { return []*Script{s.Reserve, s.Transition, s.Compensate} }

// Settled is a cluster's state as WaitSettled last saw it.
type Settled struct {
	OK     bool          `json:"ok"`
	Waited time.Duration `json:"-"`
	// Unsettled names what was still moving at the last look (empty when OK).
	Unsettled []string `json:"unsettled,omitempty"`
	// Nodes is how many nodes were looked at (nodes Admin could not reach,
	// known to be down, are skipped).
	Nodes int `json:"nodes"`
}

// WaitSettled polls every node of `nodes` (directly, never through a
// proxy) until the cluster is settled or ctx ends: no fork in progress
// (rdb_bgsave_in_progress, aof_rewrite_in_progress, module_fork_in_progress
// all 0), no dataset loading, every master's replicas in state=online with
// their last ACK at most 1 s old, and every replica's link up with no sync
// in progress. It returns the last state seen; when ctx ends first the
// error names what was still moving.
func WaitSettled(ctx context.Context, nodes AdminNodes, poll time.Duration) (Settled, error) {
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	t0 := time.Now()
	for {
		st := settledNow(ctx, nodes)
		st.Waited = time.Since(t0)
		if st.OK {
			return st, nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return st, fmt.Errorf("cluster not settled after %s: %s", st.Waited.Round(time.Millisecond), strings.Join(st.Unsettled, "; "))
		case <-t.C:
		}
	}
}

func settledNow(ctx context.Context, nodes AdminNodes) Settled {
	var st Settled
	for _, addr := range nodes.Addrs() {
		cl, err := nodes.Admin(addr)
		if err != nil {
			continue // known down: not part of the cluster the load meets
		}
		info, err := cl.Info(ctx, "replication", "persistence").Result()
		if err != nil {
			st.Unsettled = append(st.Unsettled, fmt.Sprintf("%s: INFO: %v", addr, err))
			continue
		}
		st.Nodes++
		for _, why := range unsettledReasons(parseInfo(info)) {
			st.Unsettled = append(st.Unsettled, addr+": "+why)
		}
	}
	st.OK = len(st.Unsettled) == 0 && st.Nodes > 0
	if st.Nodes == 0 && len(st.Unsettled) == 0 {
		st.Unsettled = []string{"no node reachable"}
	}
	return st
}

// unsettledReasons lists what INFO replication+persistence shows moving.
func unsettledReasons(f map[string]string) []string {
	var out []string
	for _, k := range []string{"rdb_bgsave_in_progress", "aof_rewrite_in_progress", "module_fork_in_progress", "loading", "async_loading"} {
		if v, ok := f[k]; ok && v != "0" {
			out = append(out, k+"="+v)
		}
	}
	switch f["role"] {
	case "master":
		n, _ := strconv.Atoi(f["connected_slaves"])
		for i := 0; i < n; i++ {
			r := parseKV(f["slave"+strconv.Itoa(i)], ",")
			lag, _ := strconv.Atoi(r["lag"])
			if r["state"] != "online" || lag > 1 {
				out = append(out, fmt.Sprintf("replica %s:%s state=%s lag=%s", r["ip"], r["port"], r["state"], r["lag"]))
			}
		}
	case "slave":
		if f["master_link_status"] != "up" {
			out = append(out, "master_link_status="+f["master_link_status"])
		}
		if v := f["master_sync_in_progress"]; v != "0" {
			out = append(out, "master_sync_in_progress="+v)
		}
	}
	return out
}

// parseInfo reads INFO's key:value lines.
func parseInfo(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// parseKV reads "a=1,b=2".
func parseKV(s, sep string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, sep) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
