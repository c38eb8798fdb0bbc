package httpsut

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/lua"
)

// A mapping's hash_tag names where the service keeps its sale: rendered
// for the activity, in braces, its slot per bucket; without one the
// service says nothing (nil: the harness observes). A tag written with
// its braces or naming a value the sale's place cannot depend on is
// refused at its line, naming the fix.
func TestMappingHashTag(t *testing.T) {
	load := func(y string) (*Mapping, error) {
		path := filepath.Join(t.TempDir(), "m.yaml")
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadMapping(path)
	}
	a := lua.NewActivity("act1", "sku1", 10, 2, 0)
	m, err := load("timeout: 1s\nhash_tag: \"sku:${sku}\"\n")
	if err != nil {
		t.Fatal(err)
	}
	slots, from := (&System{m: m}).SaleSlots(a)
	if len(slots) != 2 || slots[0] != 12156 || slots[1] != 12156 || from != "service mapping hash_tag {sku:sku1}" {
		t.Fatalf("SaleSlots = %v, %q; want [12156 12156] from the mapping's hash_tag {sku:sku1}", slots, from)
	}
	m, err = load("hash_tag: \"${activity}:${bucket}\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if slots, _ := (&System{m: m}).SaleSlots(a); len(slots) != 2 || slots[0] == slots[1] {
		t.Fatalf("a per-bucket tag gives slots %v, want one per bucket", slots)
	}
	m, err = load("timeout: 1s\n")
	if err != nil {
		t.Fatal(err)
	}
	if slots, from := (&System{m: m}).SaleSlots(a); slots != nil || from != "" {
		t.Fatalf("without hash_tag SaleSlots = %v, %q; want nothing (observed)", slots, from)
	}
	for _, c := range []struct{ y, want string }{
		{"hash_tag: \"{sku:${sku}}\"\n", "without its braces"},
		{"hash_tag: \"u:${user}\"\n", "bad reference ${user}"},
		{"hash_tag: \"s:${sku\"\n", "unclosed ${"},
	} {
		_, err := load(c.y)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), ":1: hash_tag") {
			t.Errorf("%q: error %v, want one at line 1 naming %q", c.y, err, c.want)
		}
	}
}
