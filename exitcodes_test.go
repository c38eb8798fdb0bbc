package main

import (
	"seckill-harness/internal/cmdline"
	"seckill-harness/internal/exitcode"
)

// The exit codes and run --json's object under the names the tests use.
const (
	exitPass         = exitcode.Pass
	exitCheckFailed  = exitcode.CheckFailed
	exitHarnessError = exitcode.HarnessError
	exitInconclusive = exitcode.Inconclusive
)

type runJSON = cmdline.RunJSON
