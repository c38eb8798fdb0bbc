// Package lua holds the reserve path under test: the reserve, transition and
// compensate scripts (embedded, or loaded from a team's own directory) and
// their typed Go bindings — hash tags and key builders, request shards, bucket
// routing, derived ids, result decoding, activity set-up and teardown.
//
// The contract is in docs/ARCHITECTURE.md ("The path under test"). Two properties matter most to the harness:
//
//   - A call whose reply is lost (EOF, reset, i/o timeout) returns an error
//     for which errors.Is(err, ErrOutcomeUnknown) holds: the script may have
//     run. It is never turned into a business code or a plain failure.
//   - Nothing re-sends a script behind the caller's back. Clients made by
//     NewClusterClient / NewClient (or passed through Harden) stop go-redis'
//     silent retries of EVAL/EVALSHA after a reply was lost and count every
//     wire attempt; re-sending with the same ids is the caller's decision
//     (Store.ReserveRetry).
package lua
