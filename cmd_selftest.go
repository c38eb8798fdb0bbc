package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"seckill-harness/compose"
	"seckill-harness/reports"
	"seckill-harness/runner/badpaths"
	"seckill-harness/runner/lifecycle"
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
every node) and runs the negative controls of runner/badpaths: each known-bad
version of the reserve path (the anti-patterns of docs/SPECIFICATION.md) runs
--runs short loaded runs, each on a fresh activity, under the load or fault
that exposes it:

  get-then-decr, decr-then-incr     contention: many users, small stock, 64 workers
  lua-no-request-idempotency        replays of earlier requests (and request ids reused by others)
  lua-no-user-marker                earlier users sending a new request_id
  compensate-without-status-check   releases of earlier reservations, many of them repeated
  new-request-id-on-timeout         disconnect-before-reply pulses on the hot master
  release-on-send-timeout           the async pipeline with 30% send timeouts, most delivered anyway

and the reference path runs --runs times under every one of those loads.
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
				return listBadPaths(cmd.OutOrStdout())
			}
			return runSelftest(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.runs, "runs", 3, "runs per path and load (each on a fresh activity)")
	f.StringArrayVar(&o.only, "only", nil, "run only this bad path (repeatable); the reference runs under their loads; see --list")
	f.StringVar(&o.out, "out", "", "directory to write selftest.json with the matrix (default: none)")
	f.Int64Var(&o.seed, "seed", 42, "seed of the workloads (run r uses seed+r)")
	f.BoolVar(&o.list, "list", false, "list the bad paths and exit")
	addClusterFlags(f, &o.cluster)
	return cmd
}

func listBadPaths(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tLOAD\tCAUGHT BY\tWHAT IT DOES WRONG\n")
	for _, i := range badpaths.All() {
		load := i.Load
		if i.Pending != "" {
			load = "pending"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", i.Name, load, strings.Join(i.Expect, " or "), i.Description)
	}
	return tw.Flush()
}

func runSelftest(ctx context.Context, out io.Writer, o selftestOptions) error {
	t0 := time.Now()
	if o.runs < 1 {
		return fmt.Errorf("--runs must be at least 1, got %d", o.runs)
	}
	for _, n := range o.only {
		if _, ok := badpaths.Get(n); !ok {
			return fmt.Errorf("--only %q: unknown bad path; valid: %s", n, strings.Join(badpaths.Names(), ", "))
		}
	}
	if err := badpaths.Validate(); err != nil {
		return err
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("--out %s: %w", o.out, err)
		}
	}
	st, err := lifecycle.OpenStand(ctx, out, o.cluster, 64, true)
	if err != nil {
		return err
	}
	defer st.Close()
	if !st.Cluster.Owned() {
		return fmt.Errorf("selftest writes broken data on purpose: it runs only on a cluster it creates (--cluster local or docker), not on %s", o.cluster.Spec)
	}
	// The pipeline loads' order stage: one throwaway local PostgreSQL for
	// the whole matrix (each run gets its own schema).
	pg, err := compose.StartPostgresDB(ctx, compose.PostgresOptions{}, compose.PostgresDBOptions{MaxConns: 32})
	if err != nil {
		return err
	}
	defer pg.Close()
	st.Postgres = pg.Pool()
	env := badpaths.Env{Stand: st, Secret: []byte(fmt.Sprintf("seckill-selftest-%d", o.seed)), Log: out}
	fmt.Fprintf(out, "selftest: %d run(s) per path and load\n", o.runs)
	m, err := badpaths.RunMatrix(ctx, env, badpaths.Options{Runs: o.runs, Only: o.only, Seed: o.seed})
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	if err := m.WriteText(out); err != nil {
		return err
	}
	wall := time.Since(t0)
	fmt.Fprintf(out, "wall time %.1fs (cluster start included)\n", wall.Seconds())
	if o.out != "" {
		doc := struct {
			*badpaths.Matrix
			WallSeconds float64         `json:"wall_seconds"`
			Paths       []badpaths.Info `json:"paths"`
		}{m, wall.Seconds(), badpaths.All()}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		path := filepath.Join(o.out, "selftest.json")
		if err := reports.WriteFileAtomic(path, append(b, '\n')); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintf(out, "matrix: %s\n", path)
	}
	if !m.OK {
		return errChecksFailed
	}
	return nil
}
