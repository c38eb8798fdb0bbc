package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/lua"
)

type raceOptions struct {
	users, concurrency int
	cluster            clusterFlags
	stock              int64
	buckets            uint32
	luaDir             string
}

func newRaceCmd() *cobra.Command {
	o := raceOptions{}
	cmd := &cobra.Command{
		Use:   "race",
		Short: "Race distinct users at a small stock on a fresh local cluster and check the outcome",
		Long: `race starts a local Redis Cluster, sets up one activity, sends one reserve per
distinct user from --concurrency goroutines at once, prints the outcome counts
and the stock hash of every bucket, and removes everything it started.

It passes (exit 0) when exactly min(stock, users) reservations were ACCEPTED,
every other answer was SOLD_OUT, and every bucket holds
initial == available + reserved.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRace(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.users, "users", 20000, "distinct users, one request each")
	f.Int64Var(&o.stock, "stock", 1, "total stock")
	f.Uint32Var(&o.buckets, "buckets", 1, "stock buckets")
	f.IntVar(&o.concurrency, "concurrency", 512, "goroutines sending at once")
	addClusterFlags(f, &o.cluster)
	f.StringVar(&o.luaDir, "lua-dir", "", "directory with reserve.lua, transition.lua, compensate.lua (default: the embedded scripts)")
	return cmd
}

func runRace(ctx context.Context, out io.Writer, o raceOptions) error {
	if o.users <= 0 || o.concurrency <= 0 {
		return fmt.Errorf("--users and --concurrency must be positive")
	}
	scripts, err := loadScripts(o.luaDir)
	if err != nil {
		return err
	}
	act := lua.NewActivity("race", "sku1", o.stock, o.buckets, time.Hour)
	if err := act.Validate(); err != nil {
		return fmt.Errorf("activity: %w", err)
	}

	st, err := startStand(ctx, out, o.cluster, 48, false)
	if err != nil {
		return err
	}
	defer st.close()
	rdb := st.rdb
	if err := lua.Setup(ctx, rdb, act); err != nil {
		return err
	}
	store := lua.NewStore(rdb, scripts, []byte("race-secret"))

	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
	)
	start := time.Now()
	for w := 0; w < o.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(o.users) {
					return
				}
				call, err := store.NewReserveCall(act, fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 15*time.Minute)
				outcome := ""
				if err == nil {
					var res lua.ReserveResult
					res, err = store.Reserve(ctx, call)
					outcome = res.Code.String()
				}
				switch {
				case lua.IsOutcomeUnknown(err):
					outcome = "UNKNOWN"
				case err != nil:
					outcome = "ERROR"
				}
				mu.Lock()
				counts[outcome]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}

	sent := 0
	names := make([]string, 0, len(counts))
	for k, n := range counts {
		names = append(names, k)
		sent += n
	}
	sort.Strings(names)
	fmt.Fprintf(out, "%d reserves from %d goroutines in %.2fs: %.0f calls/s\n", sent, o.concurrency, elapsed.Seconds(), float64(sent)/elapsed.Seconds())
	for _, k := range names {
		fmt.Fprintf(out, "  %-24s %d\n", k, counts[k])
	}
	ok := true
	for b := uint32(0); b < act.Buckets; b++ {
		s, err := lua.ReadStock(ctx, rdb, act.Scope(b))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "stock bucket %d: initial=%d available=%d reserved=%d released_total=%d\n",
			b, s.Initial, s.Available, s.Reserved, s.ReleasedTotal)
		if !s.Conserved() {
			ok = false
			fmt.Fprintf(out, "FAIL bucket %d: initial != available + reserved\n", b)
		}
	}
	want := int64(o.users)
	if o.stock < want {
		want = o.stock
	}
	if int64(counts["ACCEPTED"]) != want || counts["ACCEPTED"]+counts["SOLD_OUT"] != o.users {
		ok = false
		fmt.Fprintf(out, "FAIL want %d ACCEPTED and the rest SOLD_OUT\n", want)
	}
	if !ok {
		return errChecksFailed
	}
	fmt.Fprintf(out, "PASS exactly %d ACCEPTED, stock conserved\n", want)
	return nil
}
