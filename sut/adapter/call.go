package adapter

import (
	"fmt"
	"sort"
)

// Has reports whether the file declares op (reserve always does).
func (f *File) Has(op Op) bool { return f.tmpl.calls[op] != nil }

// Script is op's script (nil when the file does not declare op).
func (f *File) Script(op Op) *Script {
	if p := f.tmpl.calls[op]; p != nil {
		return p.script
	}
	return nil
}

// Scripts lists every script the file names, by field path ("reserve.script").
func (f *File) Scripts() map[string]*Script { return f.scripts }

// Tag renders ${tag}: the hash tag with v, in braces ("" without hash_tag).
func (f *File) Tag(v Values) (string, error) {
	if f.HashTag == "" {
		return "", nil
	}
	s, err := f.tmpl.hashTag.render(&v, "")
	if err != nil {
		return "", err
	}
	return "{" + s + "}", nil
}

func (f *File) renderAll(ts []Template, v *Values, tag string) ([]string, error) {
	out := make([]string, len(ts))
	for i, t := range ts {
		s, err := t.render(v, tag)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// Render builds op's KEYS and ARGV from v. It fails only for a value that
// cannot be rendered (${user_num} of a user id that is not u<number>) or
// an op the file does not declare.
func (f *File) Render(op Op, v Values) (keys, args []string, err error) {
	p := f.tmpl.calls[op]
	if p == nil {
		return nil, nil, fmt.Errorf("adapter %s declares no %s call", f.Name, op)
	}
	tag, err := f.Tag(v)
	if err != nil {
		return nil, nil, err
	}
	if keys, err = f.renderAll(p.keys, &v, tag); err != nil {
		return nil, nil, err
	}
	args, err = f.renderAll(p.args, &v, tag)
	return keys, args, err
}

// MapReply decodes a reply of op's script (as go-redis returns it: int64,
// string, []any, nil) into its outcome and the reservation id the reply
// carries ("" when the file takes the id from the call: then it is the
// ${reservation} sent). A reply the mapping does not cover is an
// *UnmappedReplyError.
func (f *File) MapReply(op Op, reply any) (Outcome, string, error) {
	p := f.tmpl.calls[op]
	if p == nil {
		return "", "", fmt.Errorf("adapter %s declares no %s call", f.Name, op)
	}
	return p.reply.decode(reply)
}

// Outcomes lists the outcome names op's mapping uses, sorted.
func (f *File) Outcomes(op Op) []Outcome {
	p := f.tmpl.calls[op]
	if p == nil {
		return nil
	}
	seen := map[Outcome]bool{}
	for _, m := range p.reply.matchers {
		seen[m.outcome] = true
	}
	if p.reply.otherwise != "" {
		seen[p.reply.otherwise] = true
	}
	out := make([]Outcome, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// KeysCount and ArgsCount are the numbers of KEYS and ARGV of op.
func (f *File) KeysCount(op Op) int {
	if p := f.tmpl.calls[op]; p != nil {
		return len(p.keys)
	}
	return 0
}

// ArgsCount is the number of ARGV of op.
func (f *File) ArgsCount(op Op) int {
	if p := f.tmpl.calls[op]; p != nil {
		return len(p.args)
	}
	return 0
}
