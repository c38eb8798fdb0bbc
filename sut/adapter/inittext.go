package adapter

import (
	"fmt"
	"strconv"
	"strings"
)

// text renders the draft as a commented adapter file whose reserve script
// is at script.
func (d *draft) text(script string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Adapter file for %s, written by `seckill-harness adapter init`.", d.name+".lua")
	w("# GUESS marks what the harness read from the script's text and from its")
	w("# replies to dry calls on a throwaway local cluster; UNKNOWN what it could")
	w("# not tell. Confirm or fix each, then:")
	w("#   seckill-harness adapter validate FILE")
	w("#   seckill-harness run smoke --adapter FILE")
	w("# Every field is explained in docs/ADAPTERS.md.")
	for _, x := range d.findings {
		w("#")
		w("# FINDING: %s", x)
	}
	w("name: %s", strconv.Quote(d.name))
	w("")
	w("# Every key of a call carries ${tag} = {%s:<activity>:<bucket>}: one slot per call.", d.name)
	w("hash_tag: %s", strconv.Quote(d.name+":${activity}:${bucket}"))
	w("")
	w("reserve:")
	w("  script: %s", strconv.Quote(script))
	d.writeList(w, "keys", "KEYS", d.keys, d.keyWhy)
	d.writeList(w, "args", "ARGV", d.args, d.argWhy)
	d.writeReply(w)
	d.writeRest(w)
	return b.String()
}

func (d *draft) writeList(w func(string, ...any), field, name string, vals, why []string) {
	if len(vals) == 0 {
		w("  %s: []  # the script names no %s[n]", field, name)
		return
	}
	w("  %s:  # the script reads %s[1..%d]", field, name, len(vals))
	for i, v := range vals {
		w("    - %-28s # %s[%d]: %s", strconv.Quote(v), name, i+1, why[i])
	}
}

func (d *draft) writeReply(w func(string, ...any)) {
	g := d.reply
	if len(d.dry) > 0 {
		w("  # Dry calls (stock %d, one bucket) and what the script answered:", dryStock)
		for i, c := range d.dry {
			ans := formatReply(c.reply)
			if c.err != "" {
				ans = "error " + strconv.Quote(c.err)
			}
			w("  #   %d. %-26s -> %s", i+1, c.label, ans)
		}
		for _, n := range g.notes {
			w("  # Note: %s", n)
		}
	}
	w("  reply:")
	if g.code > 0 {
		w("    code: %d            # GUESS: the outcome is element %d of the array reply", g.code, g.code)
	}
	if g.rid > 0 {
		w("    reservation_id: %d  # GUESS: element %d echoed the reservation id the call sent", g.rid, g.rid)
	}
	w("    outcomes:")
	outs := append([]guessed(nil), g.outcomes...)
	if !g.has(Accepted) {
		outs = append(outs, guessed{Accepted, "?accepted", "UNKNOWN: put the reply value that means a unit was reserved"})
	}
	if !g.has(SoldOut) {
		outs = append(outs, guessed{SoldOut, "?sold-out", "UNKNOWN: put the reply value that means no stock is left"})
	}
	for _, o := range outs {
		w("      %s: [%s]  # %s", o.outcome, strconv.Quote(o.value), o.why)
	}
	if g.otherwise != "" {
		w("    otherwise: %s  # any other value (remove this line to make an unmapped reply fail the run)", g.otherwise)
	}
}

// writeRest writes setup, teardown and state from the keys' roles.
func (d *draft) writeRest(w func(string, ...any)) {
	w("")
	if d.stock == 0 {
		w("# setup: UNKNOWN: no key looked like the stock; add the commands that give a bucket its ${stock}.")
	} else {
		k := strconv.Quote(d.keys[d.stock-1])
		w("setup:  # GUESS: KEYS[%d] holds the stock", d.stock)
		w("  commands:")
		if d.stockField != "" {
			w("    - [HSET, %s, %s, \"${stock}\"]", k, strconv.Quote(d.stockField))
		} else {
			w("    - [SET, %s, \"${stock}\"]", k)
		}
		w("    - [PEXPIREAT, %s, \"${retention_until_ms}\"]", k)
	}
	if len(d.keys) == 0 {
		return
	}
	quoted := make([]string, len(d.keys))
	for i, k := range d.keys {
		quoted[i] = strconv.Quote(k)
	}
	w("")
	w("teardown:  # GUESS: every key of the call")
	w("  keys: [%s]", strings.Join(quoted, ", "))
	w("")
	w("state:  # GUESS: the reads the checks need; remove any that is wrong (its checks then skip)")
	if d.stock > 0 {
		k := strconv.Quote(d.keys[d.stock-1])
		if d.stockField != "" {
			w("  available: [HGET, %s, %s]", k, strconv.Quote(d.stockField))
		} else {
			w("  available: [GET, %s]", k)
		}
		for _, f := range d.scan.keyFields[d.stock] {
			if f != d.stockField && (strings.Contains(f, "held") || strings.Contains(f, "reserved")) {
				w("  held: [HGET, %s, %s]", k, strconv.Quote(f))
				break
			}
		}
	}
	if k := d.keyOf("buyers"); k != "" {
		w("  user_hold: [SISMEMBER, %s, \"${user}\"]", strconv.Quote(k))
	}
	if k := d.keyOf("hold:${reservation}"); k != "" {
		w("  record: [EXISTS, %s]", strconv.Quote(k))
	}
	w("  expiring_keys: [%s]", strings.Join(quoted, ", "))
}
