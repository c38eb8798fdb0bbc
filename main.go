// Command seckill-harness load-tests and fault-injects the Redis flash-sale
// stock-reservation path against a real Redis Cluster, then checks the stock
// invariants and reports latency.
//
// Exit codes: 0 every check passed, 1 a check or assertion failed, 2 a
// harness or usage error (bad input, unreachable cluster, missing
// redis-server), 3 inconclusive: the stand could not sustain the plan (the
// only failures are latency or throughput assertions judged in seconds
// where the machine starved the load generator; no invariant failed).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// quietRedisLog drops go-redis's own log lines (pool and reconnect chatter
// while a node is killed or paused): every error an operation sees is
// already classified in the history and the report.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// Exit codes are a contract CI jobs rely on.
const (
	exitPass         = 0
	exitCheckFailed  = 1
	exitHarnessError = 2
	// exitInconclusive: the only failures were inconclusive latency or
	// throughput assertions (the stand could not sustain the plan).
	exitInconclusive = 3
)

// errChecksFailed is returned by a command whose run completed but whose
// checks failed: exit 1, not 2.
var errChecksFailed = errors.New("checks failed")

// errInconclusive is returned by a command whose run completed with no
// failed check but inconclusive latency or throughput assertions: exit 3.
var errInconclusive = errors.New("inconclusive: the stand could not sustain the plan")

func main() {
	// The first SIGINT/SIGTERM cancels the run: the load stops, every fault
	// is healed, the state is checked and a partial report written. A second
	// signal gets the default action (the harness's redis-server children
	// die with it: they run with a parent-death signal).
	redis.SetLogger(quietRedisLog{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the CLI with args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	out := &countingWriter{w: stdout}
	root.SetOut(out)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && out.n == 0 && wantsJSON(root, args) {
		// A usage error before the command ran (a bad flag, a wrong
		// argument count): --json still gets its one object.
		_ = (&jsonSummary{}).write(stdout, err)
	}
	switch {
	case err == nil:
		return exitPass
	case errors.Is(err, errChecksFailed):
		return exitCheckFailed
	case errors.Is(err, errInconclusive):
		return exitInconclusive
	default:
		fmt.Fprintln(stderr, "seckill-harness:", err)
		return exitHarnessError
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "seckill-harness",
		Short: "Load and fault-injection harness for the Redis flash-sale reserve path",
		Long: `seckill-harness drives the atomic Lua stock reservation against a real Redis
Cluster (by default a local one it starts and removes), checks that no stock was
oversold or lost, and reports latency.

Exit codes: 0 pass, 1 a check failed, 2 harness or usage error,
3 inconclusive: the stand could not sustain the plan.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: see '%s --help' for its flags", err, c.CommandPath())
	})
	root.AddCommand(newRunCmd(), newListCmd(), newValidateCmd(), newCompareCmd(), newCapacityCmd(),
		newSelftestCmd(), newReportCmd(), newRaceCmd(), newFaultsCmd(), newVerifyCmd(), newExploreCmd(), newCatalogueCmd(), newAdapterCmd())
	addVersion(root)
	addCompletion(root)
	addLogLevel(root)
	return root
}
