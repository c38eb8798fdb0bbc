package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Bounds every hostile input must stay within, resolve and validate together.
const (
	hostileTimeBound   = 10 * time.Second
	hostileMemoryBound = 256 << 20 // bytes allocated
)

// resolveBounded resolves and validates path under the time and memory
// bounds and returns the error (the test fails when there is none, or when
// a bound is crossed).
func resolveBounded(t *testing.T, path string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileTimeBound)
	defer cancel()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	s, err := ResolveContext(ctx, path)
	if err == nil {
		err = s.Validate()
	}
	took := time.Since(t0)
	runtime.ReadMemStats(&after)
	if ctx.Err() != nil {
		t.Fatalf("%s: not refused within %s: %v", path, hostileTimeBound, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > hostileMemoryBound {
		t.Fatalf("%s: refusing it allocated %d MB (bound %d MB)", path, alloc>>20, hostileMemoryBound>>20)
	}
	t.Logf("%s refused in %s", filepath.Base(path), took.Round(time.Millisecond))
	if err == nil {
		t.Fatalf("%s: accepted", path)
	}
	return err
}

// wantError checks that err names path:line and says text.
func wantError(t *testing.T, err error, path string, line int, text string) {
	t.Helper()
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.Contains(l, fmt.Sprintf("%s:%d:", path, line)) && strings.Contains(l, text) {
			return
		}
	}
	t.Fatalf("no error line names %s:%d and says %q:\n%s", path, line, text, err)
}

// Every file of the hostile corpus (testdata/hostile at the top of the
// repository; each starts with "# want-line: N" and "# want-text: T") is
// refused with an error naming file:N and T, within the time and memory
// bounds.
func TestHostileCorpus(t *testing.T) {
	files, err := filepath.Glob("../testdata/hostile/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("%d hostile files, want the whole corpus", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := hostileHeader(t, f)
			var line int
			if _, err := fmt.Sscan(want["line"], &line); err != nil || want["text"] == "" {
				t.Fatalf("%s: header needs # want-line: N and # want-text: T", f)
			}
			wantError(t, resolveBounded(t, f), f, line, want["text"])
		})
	}
}

// hostileHeader reads the leading "# want-KEY: value" lines of path.
func hostileHeader(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "# want-"), ": ")
		if !strings.HasPrefix(l, "# want-") || !ok {
			break
		}
		out[k] = v
	}
	return out
}

// Hostile inputs too large to keep in the repository are written here.
func TestHostileGenerated(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	phaseList := func(n int) string {
		var b strings.Builder
		b.WriteString("name: many\nphases:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {name: p%d, duration: 1ms, rate: 1}\n", i)
		}
		return b.String()
	}
	cases := []struct {
		name, body string
		line       int
		text       string
	}{
		// 200 KB of nested brackets: took ~100 s and GBs in the YAML parser.
		{"brackets-200k.yaml", "name: deep\nx: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n",
			2, "brackets nested more than 64 deep"},
		// 5 MB, 116k phases: took 4 GB. Refused on its size first.
		{"phases-5mb.yaml", phaseList(116_000), strings.Count(phaseList(116_000)[:MaxFileBytes], "\n") + 1, "goes on past 262144 bytes"},
		// Under the size limit, still far too many phases.
		{"phases-5k.yaml", phaseList(5_000), 1003, "5000 phases: at most 1000"},
		{"faults-300.yaml", "name: many-faults\nphases:\n  - {name: load, duration: 10s, rate: 10}\nfaults:\n" +
			strings.Repeat("  - {kind: latency, at: 1s, for: 1s}\n", 300), 261, "300 faults: at most 256"},
		// Indentation nested 700 deep (under MaxFileBytes).
		{"indent-700.yaml", func() string {
			var b strings.Builder
			b.WriteString("name: deep\n")
			for i := range 700 {
				b.WriteString(strings.Repeat(" ", i) + "k:\n")
			}
			return b.String()
		}(), 66, "nested more than 64 deep"},
		// A file of aliases of one small anchor, just under MaxFileBytes.
		{"aliases-256k.yaml", "name: aliases\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: [" +
			strings.Repeat("*a, ", 65_000) + "*a]\n", 3, "alias *a: the document expands to more than 100000 values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(c.name, c.body)
			wantError(t, resolveBounded(t, p), p, c.line, c.text)
		})
	}
}

// ResolveContext returns as soon as its context is done, naming the file,
// even while the parse would still take long.
func TestResolveContextHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ResolveContext(ctx, "smoke")
	if err == nil || !strings.Contains(err.Error(), "smoke") || !strings.Contains(err.Error(), "interrupted") {
		// A built-in may parse before the select sees ctx; retry with a
		// file large enough that it cannot.
		p := filepath.Join(t.TempDir(), "big.yaml")
		body := "name: big\nphases:\n" + strings.Repeat("  - {name: p, duration: 1ms, rate: 1}\n", 5_000)
		if werr := os.WriteFile(p, []byte(body), 0o644); werr != nil {
			t.Fatal(werr)
		}
		_, err = ResolveContext(ctx, p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "interrupted") {
			t.Fatalf("a cancelled context: %v", err)
		}
	}
}

// The limits leave every built-in well inside them.
func TestBuiltinsWithinLimits(t *testing.T) {
	for _, in := range Builtins() {
		s, err := Builtin(in.Name)
		if err != nil {
			t.Fatalf("%s: %v", in.Name, err)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: %v", in.Name, err)
		}
	}
}

// assertions.max_dropped_ratio is read, resolved and validated: a ratio
// in (0, 1]; it sets the run's dropped-operations bound.
func TestMaxDroppedRatio(t *testing.T) {
	s := mustParse(t, "phases: [{name: load, duration: 5s}]\nassertions: {max_dropped_ratio: 0.05}\n")
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if r := s.Assertions.MaxDroppedRatio; r == nil || *r != 0.05 {
		t.Fatalf("max_dropped_ratio: %v", r)
	}
	if got := s.Resolved()["assertions"].(map[string]any)["max_dropped_ratio"]; got != 0.05 {
		t.Fatalf("resolved: %v", got)
	}
	for _, bad := range []string{"0", "2", "-1"} {
		b := mustParse(t, "phases: [{name: load, duration: 5s}]\nassertions: {max_dropped_ratio: "+bad+"}\n")
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "assertions.max_dropped_ratio") {
			t.Fatalf("ratio %s: %v", bad, err)
		}
	}
}
