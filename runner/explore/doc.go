// Package explore draws seeded random fault schedules, runs each through
// the run lifecycle, and shrinks a failure to a minimal scenario.
//
// A Drawer draws Schedules from a seed (math/rand/v2 PCG, one source
// per schedule: the same seed, bounds, cluster and starting coverage give
// the same schedules): a load (curve, rate, duration, users, stock,
// buckets, a share of duplicates and releases) within Bounds, and one to
// three faults from the fault registry with their parameters, overlapping
// or back to back, only of kinds the cluster at hand can run by their
// declared rules (faults.Available: topology, proxies, replication
// proxies, pipeline, process control; destructive kinds only when allowed).
// Each schedule is a scenario file (Schedule.YAML) that the scenario
// validator accepts and 'seckill-harness run FILE' runs.
//
// Explore runs schedules on one stand until a budget or a run count is
// spent; a run whose invariant fails is a finding, and Shrink reduces it
// by delta debugging (a fault removed, a shorter window, a lower rate,
// fewer users, a shorter load…), keeping each change only while the same
// invariant still fails, then confirms the minimal scenario by re-running
// it. Coverage (fault kinds, pairs of kinds, load shapes) is carried
// across invocations in a state file; the generator weighs what is less
// explored higher.
package explore
