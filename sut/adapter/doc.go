// Package adapter reads a contract adapter file: how the harness calls a
// team's own reserve script (which it did not write) and how it reads the
// script's answers and state back (issue 28, docs/ADAPTERS.md).
//
// An adapter file is YAML, checked strictly when loaded (Load): an unknown
// field, a value of the wrong type, a missing required part, a bad template
// reference, an unknown outcome name or a reply value mapped twice is an
// error that names file:line, the problem and the fix.
//
// Templates. Keys, arguments and commands are templates over the
// harness's values: ${name} is replaced by the value, $$ is a literal $.
// The dollar sign keeps templates apart from Redis hash tags, which are
// written in braces: "stock:{${activity}:${bucket}}" is one key whose hash
// tag is the activity and bucket. The names, and where each may be used,
// are in the table of values (Values, valueNames); ${tag} is the file's
// hash_tag rendered and wrapped in braces.
//
// Everything in the file is optional except the reserve call and its reply
// mapping. What the file leaves out makes the checks that need it skip:
// Facts says which kinds of state the file lets the harness read, Skips
// which checks will skip for lack of them.
//
// Load refuses a file whose scripts or command lists name a command the
// harness refuses (refusedCommands: FLUSHALL, KEYS, CONFIG, CLUSTER, …;
// docs/ADAPTERS.md lists them and why) and a script that is not UTF-8
// text, before anything reaches a cluster; the pre-flight's recorder
// stops one a script names at run time.
//
// Most functions here are pure: Render builds a call's KEYS and ARGV from
// values, MapReply decodes a reply, KeySlots computes the cluster slot of
// keys, StaticFindings reports what can be seen without a cluster (keys of
// one call in different slots, keys the script builds itself). Two run
// the script: Preflight, on a throwaway activity before any load, reports
// what Redis Cluster will not let it do, as the same Finding; Init (the
// `adapter init` command) writes a starting file from a script and dry
// calls on a throwaway local cluster. Running the load is the system
// under test's business, not this package's.
package adapter
