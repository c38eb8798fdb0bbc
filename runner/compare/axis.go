package compare

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"seckill-harness/runner/lifecycle"
	"seckill-harness/sut"
)

// Axis is what a compare varies between its runs: a name and its values,
// each value applied to a copy of the plan; everything else (seed, load,
// scenario) stays the same, and each value runs on a fresh cluster.
// Bucket counts, pool sizes, the local sold-out flag and scenario variants
// are axes; a capacity search is what a compare measures at each value
// (see Options.Capacity), not an axis of its own.
type Axis struct {
	// Name names the axis in compare.json and report.json ("buckets",
	// "pool_size", "local_soldout", "variant").
	Name string
	// Title is the table's heading after the scenario's name, e.g. "same
	// seed and load per bucket count".
	Title  string
	Values []Value
	// view is how the rows of one run per value are shown.
	view view
}

// Value is one value of an axis: its label (the table's and the report's
// name for it), its directory under the output, the heading printed
// before it runs, the scenario settings that make it (variants), and the
// change it makes to a copy of the plan.
type Value struct {
	Label    string
	Dir      string
	Heading  string
	Settings []string
	// Path is the reserve path a capacity search at this value loads
	// (PathScenario, PathAccept, PathSoldOut); "" for one run.
	Path  string
	Apply func(*lifecycle.Plan)
}

// DefaultBuckets are the bucket counts compare runs when none are given:
// one slot, the usual split, and 32 buckets (the widest split a pre-sale
// test is asked to try) — enough to show how the partial sell-out grows
// with the split.
const DefaultBuckets = "1,16,32"

// ParseBuckets reads "1,16,32" (--buckets).
func ParseBuckets(s string) ([]uint32, error) {
	var out []uint32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("--buckets %q: want positive counts separated by commas, e.g. %s", s, DefaultBuckets)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

// ParsePoolSizes reads "4,16,64" (--pool-sizes).
func ParsePoolSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 31)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("--pool-sizes %q: want positive pool sizes (connections per node) separated by commas, e.g. 4,16,64", s)
		}
		out = append(out, int(n))
	}
	return out, nil
}

// BucketAxis compares bucket counts (the default compare).
func BucketAxis(counts []uint32) Axis {
	ax := Axis{Name: "buckets", Title: "same seed and load per bucket count", view: bucketView}
	for _, n := range counts {
		label := fmt.Sprintf("%d bucket(s)", n)
		ax.Values = append(ax.Values, Value{Label: label, Heading: label, Dir: fmt.Sprintf("buckets-%d", n),
			Apply: func(q *lifecycle.Plan) { q.Buckets = n }})
	}
	return ax
}

// PoolSizeAxis compares the load client's pool sizes per node (the
// connections the workers share): on a hot slot a bigger pool does not
// raise throughput, it moves the queue from the pool into Redis.
func PoolSizeAxis(sizes []int) Axis {
	ax := Axis{Name: "pool_size", Title: "same seed and load per client pool size (connections per node)", view: poolView}
	for _, n := range sizes {
		label := fmt.Sprintf("pool %d", n)
		ax.Values = append(ax.Values, Value{Label: label, Heading: label, Dir: fmt.Sprintf("pool-%d", n),
			Apply: func(q *lifecycle.Plan) { q.Cluster.PoolSize = n }})
	}
	return ax
}

// LocalSoldOutAxis compares the path without the local sold-out flag and
// with it at ttl: the Redis calls it saves after the sell-out against the
// undersell window it costs.
func LocalSoldOutAxis(ttl time.Duration) Axis {
	on := "flag " + ttl.String()
	return Axis{Name: "local_soldout", Title: "same seed and load without and with the local sold-out flag", view: localSoldOutView,
		Values: []Value{
			{Label: "no flag", Heading: "no flag", Dir: "local-soldout-off", Apply: func(q *lifecycle.Plan) { q.LocalSoldOut = sut.LocalSoldOutConfig{} }},
			{Label: on, Heading: on, Dir: "local-soldout-" + ttl.String(), Apply: func(q *lifecycle.Plan) { q.LocalSoldOut.TTL = ttl }},
		}}
}

// VariantAxis compares variants of the scenario: each value replaces the
// plan with the variant's own (the scenario with the variant's settings,
// built by the caller), so the settings reach everything a scenario sets.
func VariantAxis(specs []VariantSpec, plans []*lifecycle.Plan) Axis {
	ax := Axis{Name: "variant", Title: "same seed and load per variant", view: variantView}
	for i, v := range specs {
		built := plans[i]
		ax.Values = append(ax.Values, Value{Label: v.Name, Dir: v.Name, Heading: v.Name + ": " + settingsText(v.Sets),
			Settings: append([]string{}, v.Sets...), Apply: func(q *lifecycle.Plan) { *q = *built }})
	}
	return ax
}

// byPath is the axis with each value once per reserve path, path by path
// (compare --capacity --path-mix both measures accept, then sold-out).
func (a Axis) byPath(paths []string) Axis {
	out := a
	out.Values = nil
	for _, path := range paths {
		for _, v := range a.Values {
			v.Path = path
			v.Heading = fmt.Sprintf("%s path, %s", path, v.Label)
			v.Label = fmt.Sprintf("%s, %s", v.Label, path)
			v.Dir = path + "/" + v.Dir
			out.Values = append(out.Values, v)
		}
	}
	return out
}

func settingsText(sets []string) string {
	if len(sets) == 0 {
		return "the scenario as written"
	}
	return strings.Join(sets, " ")
}
