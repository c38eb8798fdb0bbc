package selftest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"seckill-harness/compose"
	"seckill-harness/reports"
	"seckill-harness/runner/lifecycle"
	"seckill-harness/sut/badpaths"
)

// Options are selftest's flags.
type Options struct {
	Cluster lifecycle.ClusterSpec // must be a cluster the harness creates
	Runs    int                   // runs per path and load
	Only    []string              // bad paths to run (empty: all)
	Seed    int64                 // run r uses Seed+r
	Out     string                // directory for selftest.json ("" = none)
	Logger  *slog.Logger          // the cluster's start and stop (nil: discarded)
}

// Run opens one cluster with proxies (and one local PostgreSQL for
// the pipeline loads), runs the matrix on it, prints it, and writes
// selftest.json to o.Out. The matrix's OK is the verdict; an error is a
// harness error.
func Run(ctx context.Context, out io.Writer, o Options) (*Matrix, error) {
	t0 := time.Now()
	if o.Runs < 1 {
		return nil, fmt.Errorf("--runs must be at least 1, got %d", o.Runs)
	}
	for _, n := range o.Only {
		if _, ok := badpaths.Get(n); !ok {
			return nil, fmt.Errorf("--only %q: unknown bad path; valid: %s", n, strings.Join(badpaths.Names(), ", "))
		}
	}
	if err := badpaths.Validate(); err != nil {
		return nil, err
	}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, fmt.Errorf("--out %s: %w", o.Out, err)
		}
	}
	st, err := lifecycle.OpenStand(ctx, o.Logger, o.Cluster, 64, true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if !st.Cluster.Owned() {
		return nil, fmt.Errorf("selftest writes broken data on purpose: it runs only on a cluster it creates (--cluster local or docker), not on %s", o.Cluster.Spec)
	}
	// The pipeline loads' order stage: one throwaway local PostgreSQL for
	// the whole matrix (each run gets its own schema).
	pg, err := compose.StartPostgresDB(ctx, compose.PostgresOptions{}, compose.PostgresDBOptions{MaxConns: 32})
	if err != nil {
		return nil, err
	}
	defer pg.Close()
	st.Postgres = pg.Pool()
	env := Env{Stand: st, Secret: []byte(fmt.Sprintf("seckill-selftest-%d", o.Seed)), Log: out}
	fmt.Fprintf(out, "selftest: %d run(s) per path and load\n", o.Runs)
	m, err := RunMatrix(ctx, env, MatrixOptions{Runs: o.Runs, Only: o.Only, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(out)
	if err := m.WriteText(out); err != nil {
		return nil, err
	}
	wall := time.Since(t0)
	fmt.Fprintf(out, "wall time %.1fs (cluster start included)\n", wall.Seconds())
	if o.Out != "" {
		doc := struct {
			*Matrix
			WallSeconds float64         `json:"wall_seconds"`
			Paths       []badpaths.Info `json:"paths"`
		}{m, wall.Seconds(), badpaths.All()}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return nil, err
		}
		path := filepath.Join(o.Out, "selftest.json")
		if err := reports.WriteFileAtomic(path, append(b, '\n')); err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintf(out, "matrix: %s\n", path)
	}
	return m, nil
}
