package main

import (
	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/internal/exitcode"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/selftest"
	"seckill-harness/sut/badpaths"
)

type selftestOptions struct {
	cluster lifecycle.ClusterSpec
	runs    int
	only    []string
	out     string
	seed    int64
	list    bool
}

func newSelftestCmd() *cobra.Command {
	var o selftestOptions
	cmd := &cobra.Command{
		Use:   "selftest",
		Short: "Prove the checker can fail: run known-bad reserve paths and the reference, print what caught what",
		Long: `selftest starts ONE local Redis Cluster (with an embedded toxiproxy in front of
every node) and runs the negative controls of sut/badpaths: each known-bad
version of the reserve path (the anti-patterns of docs/SPECIFICATION.md) runs
--runs short loaded runs, each on a fresh activity, under the load or fault
that exposes it:

  get-then-decr, decr-then-incr     contention: many users, small stock, 64 workers
  lua-no-ttl                        contention (its reservation records never expire: K1)
  lua-no-request-idempotency        replays of earlier requests (and request ids reused by others)
  lua-no-user-marker                earlier users sending a new request_id
  compensate-without-status-check   releases of earlier reservations, many of them repeated
  compensate-marker-left            releases, and the users they released back with a new request_id (H1)
  lua-stale-soldout                 contention (SOLD_OUT while about a hundred units remain: H1)
  query-hides-released              releases, and status queries of earlier requests (H1)
  new-request-id-on-timeout         disconnect-before-reply pulses on the hot master
  release-on-send-timeout           the async pipeline with 30% send timeouts, most delivered anyway
  serve:new-request-id-on-timeout,  the reference access service (seckill-harness serve) started
  serve:retry-without-ids,          in-process per run with that defect on, under a latency toxic
  serve:timeout-is-failure          beyond its Redis timeout on the bucket's master (S2, S2, S4)
  serve:fail-open                   the same, under slot-down of the bucket's master (S1)

and the reference path runs --runs times under every one of those loads
(the reference service, row serve, under the service rows' loads).
Each run is checked with every invariant (the pipeline's too where the
pipeline runs); the matrix shows, per path, the
invariant(s) expected to catch it, how many runs were caught, and which
invariants actually failed. Paths that cannot run yet are shown as pending.

Exit codes: 0 every runnable bad path was caught in every run by one of its
expected invariants and the reference passed every run; 1 otherwise; 2 on a
harness or usage error.`,
		Example: `  seckill-harness selftest
  seckill-harness selftest --runs 1 --only get-then-decr --only new-request-id-on-timeout
  seckill-harness selftest --out out/ --list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return badpaths.WriteList(cmd.OutOrStdout())
			}
			m, err := selftest.Run(cmd.Context(), cmd.OutOrStdout(), selftest.Options{Cluster: o.cluster,
				Runs: o.runs, Only: o.only, Seed: o.seed, Out: o.out, Logger: cmdline.Logger(cmd)})
			if err != nil {
				return err
			}
			if !m.OK {
				return exitcode.ErrChecksFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.runs, "runs", 3, "runs per path and load (each on a fresh activity)")
	f.StringArrayVar(&o.only, "only", nil, "run only this bad path (repeatable); the reference runs under their loads; see --list")
	f.StringVar(&o.out, "out", "", "directory to write selftest.json with the matrix (default: none)")
	f.Int64Var(&o.seed, "seed", 42, "seed of the workloads (run r uses seed+r)")
	f.BoolVar(&o.list, "list", false, "list the bad paths and exit")
	cmdline.ClusterFlags(f, &o.cluster)
	return cmd
}
