package httpsut

import (
	"fmt"
	"strconv"
	"strings"

	"seckill-harness/lua"
	"seckill-harness/sut"
	"seckill-harness/sut/adapter"
)

// hashTagValues are the values a mapping's hash_tag may name.
var hashTagValues = []string{"activity", "sku", "bucket"}

// mergeHashTag takes file f's hash_tag, refusing braces and values it
// cannot render.
func (m *Mapping) mergeHashTag(f *Mapping) error {
	if f.HashTag == "" {
		return nil
	}
	lit, err := templateRefs(f.HashTag, "sku", "a hash tag", hashTagValues, " (the sale's place cannot depend on the user or the request)")
	if err != nil {
		return f.errAt("hash_tag", "%v", err)
	}
	if strings.ContainsAny(lit, "{}") {
		return f.errAt("hash_tag", "%q: give the tag without its braces (sku:${sku} for keys {sku:<sku>}:…)", f.HashTag)
	}
	m.HashTag = f.HashTag
	return nil
}

// renderHashTag is the mapping's hash tag for bucket b of a, in braces.
func (m *Mapping) renderHashTag(a *lua.Activity, b uint32) string {
	r := strings.NewReplacer("${activity}", a.ID, "${sku}", a.SKU, "${bucket}", strconv.FormatUint(uint64(b), 10))
	return "{" + r.Replace(m.HashTag) + "}"
}

var _ sut.SaleKeys = (*System)(nil)

// SaleSlots implements sut.SaleKeys: the slot of the mapping's hash_tag
// for each bucket of a; without one, with state: reference, the
// reference contract's keys'; otherwise nil (the harness observes).
func (s *System) SaleSlots(a *lua.Activity) ([]int, string) {
	if s.m.HashTag == "" {
		if !s.m.ReferenceState() {
			return nil, ""
		}
		var slots []int
		for b := uint32(0); b < a.Buckets; b++ {
			slots = append(slots, adapter.KeySlot(a.Scope(b).StockKey()))
		}
		return slots, "reference contract keys (service mapping state: reference)"
	}
	var slots []int
	for b := uint32(0); b < a.Buckets; b++ {
		slots = append(slots, adapter.KeySlot(s.m.renderHashTag(a, b)))
	}
	return slots, fmt.Sprintf("service mapping hash_tag %s", s.m.renderHashTag(a, 0))
}
