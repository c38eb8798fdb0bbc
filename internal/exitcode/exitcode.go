// Package exitcode is the harness's exit contract, which CI jobs rely on:
// the process exit codes, what each means, and the two errors a command
// returns when its run completed but did not pass. Code maps any command
// error to its exit code; every other error is a harness or usage error.
package exitcode

import (
	"errors"
	"strings"
)

// The exit codes. They are a contract: never renumber.
const (
	// Pass: every check passed.
	Pass = 0
	// CheckFailed: a check or assertion failed (ErrChecksFailed).
	CheckFailed = 1
	// HarnessError: bad input, an unreachable cluster, a missing binary,
	// an interrupted run: the run could not be judged.
	HarnessError = 2
	// Inconclusive: no check failed, but the run could not show a pass:
	// its only shortfalls are inconclusive assertions, each for one of
	// InconclusiveReasons (ErrInconclusive). Invariants are never
	// inconclusive.
	Inconclusive = 3
)

// InconclusiveReasons are what makes an assertion inconclusive, and so a
// run whose only shortfalls they are exit 3, in the words Meaning,
// ErrInconclusive, the CLI's help and the docs use: a latency or
// throughput assertion failed in seconds where the machine starved the
// load generator (the lifecycle's InconclusiveRule), or a fault aimed
// where the system under test keeps its sale acted on masters that served
// none of its Redis traffic (MissedRule). A new cause of an inconclusive
// assertion adds its reason here; a test holds the docs to this list.
var InconclusiveReasons = []string{
	"the stand could not sustain the plan",
	"a fault missed the system under test",
}

// inconclusive is code 3's meaning: "inconclusive: no check failed, but
// <reason>, or <reason>".
var inconclusive = "inconclusive: no check failed, but " + strings.Join(InconclusiveReasons, ", or ")

// ErrChecksFailed is returned by a command whose run completed but whose
// checks failed: exit 1, not 2.
var ErrChecksFailed = errors.New("checks failed")

// ErrInconclusive is returned by a command whose run completed with no
// failed check but inconclusive assertions (InconclusiveReasons): exit 3.
var ErrInconclusive = errors.New(inconclusive)

// meanings are the codes as run --json and catalogue --json state them.
var meanings = map[int]string{
	Pass:         "every check passed",
	CheckFailed:  "a check or assertion failed",
	HarnessError: "harness or usage error: the run could not be judged",
	Inconclusive: inconclusive,
}

// verdicts are the codes as a one-word verdict.
var verdicts = map[int]string{Pass: "PASS", CheckFailed: "FAIL", HarnessError: "ERROR", Inconclusive: "INCONCLUSIVE"}

// Of is the exit code of a command that returned err: Pass for nil,
// CheckFailed and Inconclusive for ErrChecksFailed and ErrInconclusive
// (wrapped or not), HarnessError for any other error.
func Of(err error) int {
	switch {
	case err == nil:
		return Pass
	case errors.Is(err, ErrChecksFailed):
		return CheckFailed
	case errors.Is(err, ErrInconclusive):
		return Inconclusive
	default:
		return HarnessError
	}
}

// Meaning is what code means, in the words of the --json objects ("" for
// a code outside the contract).
func Meaning(code int) string { return meanings[code] }

// Verdict is code as PASS, FAIL, ERROR or INCONCLUSIVE ("" outside the contract).
func Verdict(code int) string { return verdicts[code] }

// Judged drops ErrChecksFailed and ErrInconclusive from err: what is left
// is a harness error (nil when the run was judged, whatever the verdict).
func Judged(err error) error {
	if errors.Is(err, ErrChecksFailed) || errors.Is(err, ErrInconclusive) {
		return nil
	}
	return err
}
