package main

import (
	"seckill-harness/lua"
	"seckill-harness/runner"
	"seckill-harness/runner/badpaths"
	"seckill-harness/scenarios"
)

func init() {
	// A scenario's path: field accepts the reference and every runnable bad path.
	scenarios.KnownPaths = pathNames
}

// lookupPath finds a known-bad reserve path by name (negative controls);
// pending paths are not runnable and are not found.
func lookupPath(name string) (func(*lua.Store) runner.Path, bool) { return badpaths.Lookup(name) }

// pathNames lists the selectable reserve paths: the reference first.
func pathNames() []string {
	out := []string{scenarios.DefaultPath}
	for _, n := range badpaths.Names() {
		if _, ok := badpaths.Lookup(n); ok {
			out = append(out, n)
		}
	}
	return out
}
