package main

import (
	"seckill-harness/lua"
	"seckill-harness/runner"
)

// lookupPath finds a known-bad reserve path by name (negative controls).
// Until the registry exists only the reference path is known.
func lookupPath(name string) (func(*lua.Store) runner.Path, bool) { return nil, false }

// pathNames lists the selectable reserve paths.
func pathNames() []string { return []string{"reference"} }
