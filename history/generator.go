package history

import (
	"fmt"
	"strconv"
	"strings"
)

// Generator is load generator Index of Count harness processes driving one
// activity together (--generator I/N). Generator I uses only the user
// indices and request indices congruent to I mod Count: ids stay "u<n>" and
// "r<n>", never collide between generators, and stay a pure function of the
// seed and (I, N). Users is the total over all generators. The zero value
// (and 0/1) is the whole load, exactly as without generators.
type Generator struct {
	Index int
	Count int
}

// N is the number of generators (at least 1).
func (g Generator) N() int { return max(g.Count, 1) }

// Split reports whether the load is shared with other generators: then no
// run sees every operation, and checks of global counters against its
// history are judged on the merge.
func (g Generator) Split() bool { return g.Count > 1 }

// String is "I/N".
func (g Generator) String() string { return fmt.Sprintf("%d/%d", g.Index, g.N()) }

// ParseGenerator reads "I/N" with 0 <= I < N.
func ParseGenerator(s string) (Generator, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	gi, err1 := strconv.Atoi(i)
	gn, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Generator{}, fmt.Errorf("generator %q: want I/N, e.g. 0/2 for the first of two generators", s)
	}
	g := Generator{Index: gi, Count: gn}
	if gn < 1 {
		return g, fmt.Errorf("generator %q: N must be at least 1", s)
	}
	return g, g.Validate()
}

// Validate reports a generator outside 0 <= I < N.
func (g Generator) Validate() error {
	if g.Count < 0 || g.Index < 0 || g.Index >= g.N() {
		return fmt.Errorf("generator %d/%d: want 0 <= I < N", g.Index, g.Count)
	}
	return nil
}
