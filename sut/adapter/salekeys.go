package adapter

import (
	"fmt"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

var _ sut.SaleKeys = (*System)(nil)

// SaleSlots implements sut.SaleKeys: the slot of the file's hash_tag for
// each bucket of a. nil when the file has no hash_tag, or one that names
// the user (then the sale spans slots and the harness observes its
// traffic instead).
func (s *System) SaleSlots(a *lua.Activity) ([]int, string) {
	f := s.file
	if f.HashTag == "" || f.tmpl.hashTag.scopeOf(Template{})&^ctxBucket != 0 {
		return nil, ""
	}
	var slots []int
	var first string
	for b := uint32(0); b < a.Buckets; b++ {
		tag, err := f.Tag(ActivityValues(a, b))
		if err != nil {
			return nil, ""
		}
		if b == 0 {
			first = tag
		}
		slots = append(slots, KeySlot(tag))
	}
	return slots, fmt.Sprintf("adapter hash_tag %s", first)
}
