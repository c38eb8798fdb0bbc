package explore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"seckill-harness/internal/boundedread"
	"seckill-harness/reports"
)

// CoverageVersion is the state file's format version.
const CoverageVersion = 1

// Coverage is what has been explored, carried across invocations in a
// small JSON state file (--state) a CI job can cache: how many runs drew
// each fault kind, each unordered pair of kinds, and each load shape
// (Schedule.LoadShape). The generator prefers what is less explored.
type Coverage struct {
	Version int            `json:"version"`
	Runs    int            `json:"runs"`
	Kinds   map[string]int `json:"kinds"`
	Pairs   map[string]int `json:"pairs"`
	Shapes  map[string]int `json:"shapes"`
	Seeds   []int64        `json:"seeds,omitempty"`    // the --seed of every invocation, in order
	Updated time.Time      `json:"updated,omitzero"`   // when the state was last written
	Finds   map[string]int `json:"findings,omitempty"` // invariant id -> findings recorded
}

// NewCoverage is an empty coverage.
func NewCoverage() *Coverage {
	return &Coverage{Version: CoverageVersion, Kinds: map[string]int{}, Pairs: map[string]int{}, Shapes: map[string]int{}}
}

// MaxStateBytes is the largest --state file LoadCoverage reads (64 MiB:
// a state file holds counts per kind, pair and shape, a few KiB).
const MaxStateBytes = 64 * boundedread.MiB

// LoadCoverage reads a state file; a file that does not exist is an empty
// coverage (the first night). A file that does not parse is an error
// naming it and the fix.
func LoadCoverage(path string) (*Coverage, error) {
	c := NewCoverage()
	if path == "" {
		return c, nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	data, err := boundedread.File(path, MaxStateBytes, "--state file", "point --state at the JSON file an earlier explore wrote, or at a new path")
	if err != nil {
		return nil, fmt.Errorf("--state %s: %w", path, err)
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("--state %s: not an explore state file (%v): remove it or point --state elsewhere", path, err)
	}
	if c.Version != CoverageVersion {
		return nil, fmt.Errorf("--state %s: format version %d, this harness writes %d: remove the file to start afresh", path, c.Version, CoverageVersion)
	}
	for _, m := range []*map[string]int{&c.Kinds, &c.Pairs, &c.Shapes} {
		if *m == nil {
			*m = map[string]int{}
		}
	}
	return c, nil
}

// Save writes the state file atomically.
func (c *Coverage) Save(path string) error {
	if path == "" {
		return nil
	}
	c.Updated = time.Now().UTC()
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := reports.WriteFileAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("--state %s: %w", path, err)
	}
	return nil
}

// Clone copies the coverage.
func (c *Coverage) Clone() *Coverage {
	out := NewCoverage()
	out.Runs, out.Seeds, out.Updated = c.Runs, append([]int64(nil), c.Seeds...), c.Updated
	for _, p := range [][2]map[string]int{{c.Kinds, out.Kinds}, {c.Pairs, out.Pairs}, {c.Shapes, out.Shapes}} {
		for k, v := range p[0] {
			p[1][k] = v
		}
	}
	if c.Finds != nil {
		out.Finds = map[string]int{}
		for k, v := range c.Finds {
			out.Finds[k] = v
		}
	}
	return out
}

// Add counts one explored schedule.
func (c *Coverage) Add(s Schedule) {
	c.Runs++
	for _, k := range s.Kinds() {
		c.Kinds[k]++
	}
	for _, p := range s.Pairs() {
		c.Pairs[p]++
	}
	c.Shapes[s.LoadShape()]++
}

// Finding counts one finding of invariant id.
func (c *Coverage) Finding(id string) {
	if c.Finds == nil {
		c.Finds = map[string]int{}
	}
	c.Finds[id]++
}

// shapeCount is how often a load shape kind (the curve: constant, sine…)
// has been explored, over every rate band and mix.
func (c *Coverage) shapeCount(kind string) int {
	n := 0
	for k, v := range c.Shapes {
		if strings.HasPrefix(k, kind+"/") {
			n += v
		}
	}
	return n
}

func pairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "+" + b
}

// WriteText prints the coverage: every kind the generator may draw (with
// the ones never explored marked), the pairs explored and the pairs of
// those kinds never explored, and the load shapes.
func (c *Coverage) WriteText(w io.Writer, drawable []string) error {
	fmt.Fprintf(w, "coverage after %d run(s) in all (%d invocation(s)):\n", c.Runs, max(len(c.Seeds), 1))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FAULT KIND\tRUNS")
	kinds := append([]string(nil), drawable...)
	for k := range c.Kinds {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		note := ""
		if !slices.Contains(drawable, k) {
			note = "  (not drawable on this cluster/flags)"
		}
		fmt.Fprintf(tw, "  %s\t%d%s\n", k, c.Kinds[k], note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	total, seen := 0, 0
	for i := 0; i < len(drawable); i++ {
		for j := i + 1; j < len(drawable); j++ {
			total++
			if c.Pairs[pairKey(drawable[i], drawable[j])] > 0 {
				seen++
			}
		}
	}
	fmt.Fprintf(w, "  pairs of drawable kinds explored: %d of %d\n", seen, total)
	for _, k := range sortedKeys(c.Pairs) {
		fmt.Fprintf(w, "    %-50s %d\n", k, c.Pairs[k])
	}
	fmt.Fprintf(w, "  load shapes explored: %d\n", len(c.Shapes))
	for _, k := range sortedKeys(c.Shapes) {
		fmt.Fprintf(w, "    %-50s %d\n", k, c.Shapes[k])
	}
	return nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
