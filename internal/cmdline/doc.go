// Package cmdline holds what the seckill-harness commands share and that is
// about the command line: the flag sets of the commands and their shared
// parts (ClusterFlags, SaleFlags, ResultsFlags, WaitFlags, ScenarioFlags,
// CapacityFlags, CompareFlags, RunFlags, ExploreFlags, TrendFlags), the
// translation of what they say into the library packages' inputs (a plan,
// a suite, an output, a source), --log-level and the logger it gives,
// --json's one object for run (and for a usage error before a command
// ran), and shell completion of the harness's names. The work itself is
// the library packages'; package main wires these into cobra commands
// (flags in, exit code out), and the exit contract itself is package
// internal/exitcode.
package cmdline
