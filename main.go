// Command seckill-harness load-tests and fault-injects the Redis flash-sale
// stock-reservation path against a real Redis Cluster, then checks the stock
// invariants and reports latency.
//
// Exit codes: 0 every check passed, 1 a check or assertion failed, 2 a
// harness or usage error (bad input, unreachable cluster, missing
// redis-server), 3 inconclusive: no check failed, but the stand could not
// sustain the plan (a latency or throughput assertion failed in seconds
// where the machine starved the load generator), or a fault missed the
// system under test (exitcode.InconclusiveReasons).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"seckill-harness/internal/cmdline"
	"seckill-harness/internal/exitcode"
)

// quietRedisLog drops go-redis's own log lines (pool and reconnect chatter
// while a node is killed or paused): every error an operation sees is
// already classified in the history and the report.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

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
	out := &cmdline.CountingWriter{W: stdout}
	root.SetOut(out)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && out.N == 0 && cmdline.WantsJSON(root, args) {
		// A usage error before the command ran (a bad flag, a wrong
		// argument count): --json still gets its one object.
		_ = (&cmdline.Summary{}).Write(stdout, err)
	}
	code := exitcode.Of(err)
	if code == exitcode.HarnessError {
		fmt.Fprintln(stderr, "seckill-harness:", err)
	}
	return code
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "seckill-harness",
		Short: "Load and fault-injection harness for the Redis flash-sale reserve path",
		Long: `seckill-harness drives the atomic Lua stock reservation against a real Redis
Cluster (by default a local one it starts and removes), checks that no stock was
oversold or lost, and reports latency.

Exit codes: 0 pass, 1 a check failed, 2 harness or usage error,
3 ` + exitcode.Meaning(exitcode.Inconclusive) + ".",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: see '%s --help' for its flags", err, c.CommandPath())
	})
	root.AddCommand(newRunCmd(), newListCmd(), newValidateCmd(), newCompareCmd(), newCapacityCmd(),
		newSelftestCmd(), newReportCmd(), newRaceCmd(), newFaultsCmd(), newVerifyCmd(), newExploreCmd(), newCatalogueCmd(), newAdapterCmd(), newTrendCmd(),
		newServeCmd())
	addVersion(root)
	cmdline.AddCompletion(root)
	cmdline.AddLogLevel(root)
	cmdline.AddFilesRoot(root)
	cmdline.AddOutCheck(root)
	return root
}
