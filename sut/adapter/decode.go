package adapter

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"seckill-harness/internal/fileref"
)

// The decoder walks the YAML tree into the model by reflection, so the
// strict check (unknown field, wrong type, missing required part, key
// given twice) and the positions of every value come from one pass over
// the struct tags of model.go.

type decoder struct {
	source string
	kind   Kind
	lines  map[string]int
	err    error
}

// Kind names the kind of file a strict decode reads, for its messages.
type Kind struct {
	What  string // "adapter file"
	Empty string // what an empty file lacks: "want a mapping with at least reserve: (script:, reply:)"
	One   string // "one adapter per file"
	Docs  string // where its fields are documented: "docs/ADAPTERS.md"
}

var adapterKind = Kind{What: "adapter file", Empty: "want a mapping with at least reserve: (script:, reply:)",
	One: "one adapter per file", Docs: "docs/ADAPTERS.md"}

// fail records the first error: source:line: path: problem.
func (d *decoder) fail(line int, path, format string, args ...any) {
	if d.err == nil {
		d.err = errors.New(fileref.Clip(fmt.Sprintf("%s:%d: %s: %s", d.source, line, path, fmt.Sprintf(format, args...))))
	}
}

func lineOf(n ast.Node) int {
	if n == nil || n.GetToken() == nil || n.GetToken().Position == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

// decodeFile parses data (one YAML document, a mapping) into f.
func decodeFile(source string, data []byte, f *File) error {
	lines, err := DecodeStrict(source, data, f, adapterKind)
	f.lines = lines
	return err
}

// DecodeStrict parses data (one YAML document, a mapping) into out, a
// pointer to a struct whose fields carry their YAML names (`yaml:"name"`;
// `adapter:"required"` marks a field that must be present), as an adapter
// file is read: an unknown field, a wrong type, a missing required field,
// a key given twice, an anchor or a second document is an error
// source:line: path: problem and fix. It returns the line of every field
// path it read ("reserve.keys[2]"). Fields may be structs, pointers to
// them, maps of string keys, slices, strings and ints.
func DecodeStrict(source string, data []byte, out any, kind Kind) (map[string]int, error) {
	if err := fileref.CheckText(source, data, kind.Want()); err != nil {
		return nil, err
	}
	file, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey()) // the decoder names both lines
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil && se.Token.Position != nil {
			return nil, fileref.SyntaxError(source, se.Token.Position.Line, se.Message)
		}
		return nil, fileref.SyntaxError(source, 0, "the parser gave no position") // its own text quotes the file
	}
	var docs []*ast.DocumentNode
	for _, doc := range file.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s:1: empty %s: %s", source, kind.What, kind.Empty)
	}
	if len(docs) > 1 {
		return nil, fmt.Errorf("%s:%d: %s: a second YAML document starts here; move it to its own file", source, lineOf(docs[1].Body), kind.One)
	}
	if body := d0(docs[0].Body); body != nil {
		switch body.(type) {
		case *ast.MappingNode, *ast.MappingValueNode, *ast.NullNode, *ast.AnchorNode, *ast.AliasNode:
		default:
			return nil, fileref.NotMapping(source, lineOf(body), kind.Want())
		}
	}
	d := &decoder{source: source, kind: kind, lines: map[string]int{}}
	d.value(docs[0].Body, reflect.ValueOf(out).Elem(), "")
	return d.lines, d.err
}

// Want is what a file of this kind should be, for the errors that name a
// file without quoting it: "an adapter file (docs/ADAPTERS.md)".
func (k Kind) Want() string {
	article := "a"
	if strings.ContainsRune("aeiou", rune(k.What[0])) {
		article = "an"
	}
	return fmt.Sprintf("%s %s (%s)", article, k.What, k.Docs)
}

// d0 is the document's top value under its tags and comments (anchors
// kept: the decoder refuses them with their line).
func d0(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.CommentGroupNode:
			return nil
		default:
			return n
		}
	}
}

func label(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// unwrap skips tags and comments; anchors and aliases are refused.
func (d *decoder) unwrap(n ast.Node, path string) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.CommentGroupNode:
			return nil
		case *ast.AnchorNode, *ast.AliasNode:
			d.fail(lineOf(n), label(path), "anchors and aliases are not supported in an %s: write the value out", d.kind.What)
			return nil
		default:
			return n
		}
	}
}

func (d *decoder) value(n ast.Node, v reflect.Value, path string) {
	if d.err != nil {
		return
	}
	n = d.unwrap(n, path)
	if n == nil || d.err != nil {
		return
	}
	if path != "" {
		d.lines[path] = lineOf(n)
	}
	if _, null := n.(*ast.NullNode); null {
		return // absent, as if not written
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		d.value(n, v.Elem(), path)
	case reflect.Struct:
		d.structValue(n, v, path)
	case reflect.Map:
		d.mapValue(n, v, path)
	case reflect.Slice:
		d.sliceValue(n, v, path)
	case reflect.String:
		d.scalar(n, v, path)
	case reflect.Int:
		d.intValue(n, v, path)
	}
}

// mappingEntries returns the key/value pairs of a mapping node, failing
// when n is not a mapping or a key is given twice.
func (d *decoder) mappingEntries(n ast.Node, path, want string) []*ast.MappingValueNode {
	var entries []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		entries = m.Values
	case *ast.MappingValueNode:
		entries = []*ast.MappingValueNode{m}
	default:
		d.fail(lineOf(n), label(path), "wrong type: want a mapping (%s), not %s", want, describe(n))
		return nil
	}
	seen := map[string]int{}
	for _, e := range entries {
		k := keyText(e.Key)
		if first, dup := seen[k]; dup {
			d.fail(lineOf(e.Key), label(path), "key %q given twice (first at line %d): keep one", k, first)
			return nil
		}
		seen[k] = lineOf(e.Key)
	}
	return entries
}

func keyText(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if k != nil && k.GetToken() != nil {
		return k.GetToken().Value
	}
	return ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (d *decoder) structValue(n ast.Node, v reflect.Value, path string) {
	t := v.Type()
	names := fieldNames(t)
	entries := d.mappingEntries(n, path, "fields "+strings.Join(names, ", "))
	present := map[string]bool{}
	for _, e := range entries {
		k := keyText(e.Key)
		i := fieldIndex(t, k)
		if i < 0 {
			d.fail(lineOf(e.Key), label(path), "unknown field %q: the fields here are %s; fix the spelling or remove it", k, strings.Join(names, ", "))
			return
		}
		present[k] = true
		d.lines[join(path, k)] = lineOf(e.Key)
		d.value(e.Value, v.Field(i), join(path, k))
		if d.err != nil {
			return
		}
		if isNull(e.Value) && required(t.Field(i)) {
			present[k] = false
		}
	}
	for i := 0; i < t.NumField(); i++ {
		if name := yamlName(t.Field(i)); name != "" && required(t.Field(i)) && !present[name] {
			d.fail(lineOf(n), label(path), "missing required field %s: add %s: (see %s)", join(path, name), name, d.kind.Docs)
			return
		}
	}
}

func isNull(n ast.Node) bool { _, ok := n.(*ast.NullNode); return ok }

func (d *decoder) mapValue(n ast.Node, v reflect.Value, path string) {
	entries := d.mappingEntries(n, path, "name: values")
	v.Set(reflect.MakeMap(v.Type()))
	for _, e := range entries {
		k := keyText(e.Key)
		ev := reflect.New(v.Type().Elem()).Elem()
		d.lines[join(path, k)] = lineOf(e.Key)
		d.value(e.Value, ev, join(path, k))
		if d.err != nil {
			return
		}
		v.SetMapIndex(reflect.ValueOf(k), ev)
	}
}

func (d *decoder) sliceValue(n ast.Node, v reflect.Value, path string) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.fail(lineOf(n), label(path), "wrong type: want a list ([a, b] or one '- item' per line), not %s", describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, it := range seq.Values {
		p := fmt.Sprintf("%s[%d]", path, i+1)
		d.value(it, out.Index(i), p)
		if d.err != nil {
			return
		}
		if isNull(it) {
			d.fail(lineOf(it), p, "empty list item: write a value or remove the item")
			return
		}
	}
	v.Set(out)
}

// scalar accepts a string, number or boolean as its text.
func (d *decoder) scalar(n ast.Node, v reflect.Value, path string) {
	switch s := n.(type) {
	case *ast.StringNode:
		v.SetString(s.Value)
	case *ast.LiteralNode:
		if s.Value != nil {
			v.SetString(strings.TrimRight(s.Value.Value, "\n"))
		}
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		v.SetString(n.GetToken().Value)
	default:
		d.fail(lineOf(n), label(path), "wrong type: want a string, not %s", describe(n))
	}
}

func (d *decoder) intValue(n ast.Node, v reflect.Value, path string) {
	in, ok := n.(*ast.IntegerNode)
	if !ok {
		d.fail(lineOf(n), label(path), "wrong type: want an integer, not %s", describe(n))
		return
	}
	x, err := strconv.Atoi(in.GetToken().Value)
	if err != nil {
		d.fail(lineOf(n), label(path), "wrong type: want an integer, not %q", in.GetToken().Value)
		return
	}
	v.SetInt(int64(x))
}

func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		return fmt.Sprintf("the string %q", v.Value)
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return fmt.Sprintf("the scalar %s", n.GetToken().Value)
	}
	return n.Type().String()
}

// yamlName is a struct field's YAML name ("" when not in the file).
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

func required(f reflect.StructField) bool { return f.Tag.Get("adapter") == "required" }

func fieldIndex(t reflect.Type, name string) int {
	for i := 0; i < t.NumField(); i++ {
		if yamlName(t.Field(i)) == name && name != "" {
			return i
		}
	}
	return -1
}

// fieldNames lists the YAML names of t's fields, sorted.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if n := yamlName(t.Field(i)); n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
