package checks

import (
	"strings"

	"seckill-harness/history"
)

// ViolationSpan is when a check's violations happened, in seconds since
// the load started, read from its evidence: every number under a key
// "t_s", "at_s" or ending in "_at_s" (a sampled violation, an ack time),
// every string that is the reservation id of an operation of h (when it
// answered) and every number under "op", "ops" or "op_ids" that is an
// operation id of h. ok is false when the evidence holds no time (the
// check speaks of the whole run). It reads nothing but its arguments.
func ViolationSpan(h *history.History, evidence map[string]any) (from, to float64, ok bool) {
	c := &spanCollector{rids: map[string]bool{}, ops: map[uint32]bool{}}
	c.walk("", evidence, 0)
	if h != nil && (len(c.rids) > 0 || len(c.ops) > 0) {
		for _, o := range h.All() {
			if (o.RID != "" && c.rids[o.RID]) || c.ops[o.ID] {
				c.times = append(c.times, o.End.Seconds())
			}
		}
	}
	if len(c.times) == 0 {
		return 0, 0, false
	}
	from, to = c.times[0], c.times[0]
	for _, t := range c.times {
		from, to = min(from, t), max(to, t)
	}
	return from, to, true
}

// maxEvidenceDepth bounds the walk of nested evidence.
const maxEvidenceDepth = 6

type spanCollector struct {
	times []float64
	rids  map[string]bool
	ops   map[uint32]bool
}

func isTimeKey(k string) bool { return k == "t_s" || k == "at_s" || strings.HasSuffix(k, "_at_s") }
func isOpKey(k string) bool   { return k == "op" || k == "ops" || k == "op_ids" }

func (c *spanCollector) walk(key string, v any, depth int) {
	if depth > maxEvidenceDepth {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c.walk(k, e, depth+1)
		}
	case []map[string]any:
		for _, e := range x {
			c.walk(key, e, depth+1)
		}
	case []any:
		for _, e := range x {
			c.walk(key, e, depth+1)
		}
	case []string:
		for _, e := range x {
			c.walk(key, e, depth+1)
		}
	case []uint32:
		for _, e := range x {
			c.walk(key, e, depth+1)
		}
	case []LostAck:
		for _, l := range x {
			c.times = append(c.times, l.AckedAtS)
		}
	case string:
		if len(x) >= 16 && !strings.ContainsAny(x, " :") {
			c.rids[x] = true
		}
	default:
		c.number(key, v)
	}
}

func (c *spanCollector) number(key string, v any) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint32:
		f = float64(x)
	default:
		return
	}
	switch {
	case isTimeKey(key):
		c.times = append(c.times, f)
	case isOpKey(key) && f >= 0:
		c.ops[uint32(f)] = true
	}
}
