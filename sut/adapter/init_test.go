package adapter

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/internal/clustertest"
)

// adapter init writes, for every example script, a file that loads, with
// the script's KEYS and ARGV counts and the dry calls' replies.
func TestInitWritesAFileThatLoads(t *testing.T) {
	clustertest.Need(t)
	scripts, _ := filepath.Glob("../../docs/adapters/scripts/*.lua")
	if len(scripts) < 4 {
		t.Fatalf("found %d example scripts", len(scripts))
	}
	dir := t.TempDir()
	for _, s := range scripts {
		name := strings.TrimSuffix(filepath.Base(s), ".lua")
		t.Run(name, func(t *testing.T) {
			// The script beside the file init writes, as a team keeps
			// them: a path written in a file stays in its directory.
			src0, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			local := filepath.Join(dir, filepath.Base(s))
			if err := os.WriteFile(local, src0, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, name+".yaml")
			text, err := Init(context.Background(), local, out)
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + text)
			f, err := Load(out)
			if err != nil {
				t.Fatalf("the file init wrote does not load: %v", err)
			}
			src, _ := os.ReadFile(s)
			sc := scanSource(string(src))
			if f.KeysCount(OpReserve) != sc.nKeys || f.ArgsCount(OpReserve) != sc.nArgs || sc.nKeys == 0 {
				t.Errorf("KEYS %d ARGV %d, the script reads KEYS[1..%d] ARGV[1..%d]", f.KeysCount(OpReserve), f.ArgsCount(OpReserve), sc.nKeys, sc.nArgs)
			}
			for _, c := range initWant[name] {
				if o, _, err := f.MapReply(OpReserve, c.reply); o != c.want {
					t.Errorf("the guessed mapping reads %v as %s (%v), want %s", c.reply, o, err, c.want)
				}
			}
			if !strings.Contains(text, "1. u1, request r1") {
				t.Errorf("no dry call listed")
			}
			if _, err := Init(context.Background(), s, out); err == nil || !strings.Contains(err.Error(), "exists") {
				t.Errorf("init overwrote %s: %v", out, err)
			}
		})
	}
}

// What the guessed mappings must read, shape by shape.
var initWant = map[string][]struct {
	reply any
	want  Outcome
}{
	"cluster-safe":          {{[]any{int64(1), "x"}, Accepted}, {[]any{int64(0), ""}, SoldOut}, {[]any{int64(2), ""}, UserAlreadyReserved}},
	"different-idempotency": {{int64(1), Accepted}, {int64(0), SoldOut}, {int64(2), UserAlreadyReserved}, {int64(-1), DuplicateRequest}},
	"no-per-user-check":     {{int64(7), Accepted}, {int64(1), Accepted}, {int64(0), SoldOut}},
}
