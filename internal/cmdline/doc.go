// Package cmdline holds what the seckill-harness commands share and that is
// about the command line only: the flags of the cluster (ClusterFlags),
// --log-level and the logger it gives, --json's one object for run (and
// for a usage error before a command ran), and shell completion of the
// harness's names. It runs nothing: package main wires these into cobra
// commands over the library packages, and the exit contract itself is
// package internal/exitcode.
package cmdline
