package cmdline

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"seckill-harness/runner/lifecycle"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
)

// Sale is the size of the sale on the command line (run, race): --users,
// --stock, --buckets.
type Sale struct {
	Users   int
	Stock   int64
	Buckets uint32
}

// SaleFlags registers --users, --stock and --buckets on f into s, in that
// order, with s's values as their defaults; users and buckets are the
// command's help for --users and --buckets.
func SaleFlags(f *pflag.FlagSet, s *Sale, users, buckets string) {
	f.IntVar(&s.Users, "users", s.Users, users)
	f.Int64Var(&s.Stock, "stock", s.Stock, "total stock")
	f.Uint32Var(&s.Buckets, "buckets", s.Buckets, buckets)
}

// Flags is what the command line of cmd says about the scenario it builds
// (scenarios.Flags): the sale's stock and buckets, the flags given and
// the topology of cluster. The caller adds the load and the rest.
func (s Sale) Flags(cmd *cobra.Command, cluster lifecycle.ClusterSpec) scenarios.Flags {
	return scenarios.Flags{Stock: s.Stock, Buckets: int(s.Buckets), Given: Given(cmd.Flags()), Topology: planner.TopologyOf(cluster)}
}
