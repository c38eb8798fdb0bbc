package scenarios

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"seckill-harness/internal/fileref"
)

// The YAML document is first turned into a small tree of mappings,
// sequences and scalars that remembers where every key and value came from
// (a line of the file, or a --set). The schema check, the decoder and Set
// all work on this tree; Set edits it and decodes it again.

type nodeKind uint8

const (
	nullNode nodeKind = iota
	scalarNode
	mapNode
	seqNode
)

// pos is where a value came from: a line (and column) of the source, or a
// --set key=value.
type pos struct {
	line, col int
	set       string // the key=value of the --set that wrote it
	flag      string // the command-line flag that gave it (FromFlags, AddFaultFlags)
}

type node struct {
	kind nodeKind
	pos  pos

	text string // scalar: the value as written (unquoted)

	keys   []string // mapping: keys in document order
	vals   map[string]*node
	keyPos map[string]pos

	items []*node // sequence
}

func newMap(p pos) *node {
	return &node{kind: mapNode, pos: p, vals: map[string]*node{}, keyPos: map[string]pos{}}
}

// get returns the value of key in a mapping (nil when absent or n is not a mapping).
func (n *node) get(key string) *node {
	if n == nil || n.kind != mapNode {
		return nil
	}
	return n.vals[key]
}

// has reports whether a mapping has key with a non-null value.
func (n *node) has(key string) bool {
	v := n.get(key)
	return v != nil && v.kind != nullNode
}

func (n *node) put(key string, v *node, kp pos) {
	if _, ok := n.vals[key]; !ok {
		n.keys = append(n.keys, key)
	}
	n.vals[key] = v
	n.keyPos[key] = kp
}

func (n *node) del(key string) {
	if _, ok := n.vals[key]; !ok {
		return
	}
	delete(n.vals, key)
	delete(n.keyPos, key)
	for i, k := range n.keys {
		if k == key {
			n.keys = append(n.keys[:i:i], n.keys[i+1:]...)
			break
		}
	}
}

func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := &node{kind: n.kind, pos: n.pos, text: n.text}
	if n.kind == mapNode {
		c.keys = append([]string(nil), n.keys...)
		c.vals = make(map[string]*node, len(n.vals))
		c.keyPos = make(map[string]pos, len(n.keyPos))
		for k, v := range n.vals {
			c.vals[k] = v.clone()
		}
		for k, p := range n.keyPos {
			c.keyPos[k] = p
		}
	}
	for _, it := range n.items {
		c.items = append(c.items, it.clone())
	}
	return c
}

// wantFile is what a scenario file should be, for the errors that name a
// file without quoting it.
const wantFile = "a scenario file: a YAML mapping with name: and phases: (or suite:), see scenarios/doc.go"

// parseTree parses one YAML document. Errors name source:line.
func parseTree(source string, data []byte) (*node, error) {
	if err := fileref.CheckText(source, data, wantFile); err != nil {
		return nil, err
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil && se.Token.Position != nil {
			return nil, fileref.SyntaxError(source, se.Token.Position.Line, se.Message)
		}
		return nil, fileref.SyntaxError(source, 0, "the parser gave no position") // its own text quotes the file
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	switch len(docs) {
	case 0:
		return nil, fmt.Errorf("%s: empty scenario: want a mapping with at least name: and phases: (or suite:)", source)
	case 1:
	default:
		return nil, fmt.Errorf("%s:%d: one scenario per file: a second YAML document starts here", source, docs[1].Body.GetToken().Position.Line)
	}
	c := &converter{source: source, anchors: map[string]*node{}, sizes: map[*node]int{}}
	root := c.convert(docs[0].Body)
	if c.err != nil {
		return nil, c.err
	}
	if root.kind != mapNode {
		return nil, fileref.NotMapping(source, root.pos.line, wantFile)
	}
	return root, nil
}

type converter struct {
	source  string
	anchors map[string]*node
	sizes   map[*node]int // values under each anchor (counted once, when defined)
	nodes   int           // values in the tree so far, aliases and merges expanded
	depth   int           // mappings and lists open around the value being converted
	err     error
}

// countNodes is the number of values in the tree under n, n included.
func countNodes(n *node) int {
	if n == nil {
		return 0
	}
	total := 1
	for _, v := range n.vals {
		total += countNodes(v)
	}
	for _, it := range n.items {
		total += countNodes(it)
	}
	return total
}

// grow adds n values to the tree; over MaxNodes it fails at p (what says
// where they come from) and reports false.
func (c *converter) grow(p pos, n int, what string) bool {
	c.nodes += n
	if c.nodes > MaxNodes {
		c.fail(p, "%s: the document expands to more than %d values (aliases and merges count every copy): a scenario needs far fewer; write the values out or use fewer aliases", what, MaxNodes)
		return false
	}
	return true
}

func (c *converter) fail(p pos, format string, args ...any) *node {
	if c.err == nil {
		c.err = errors.New(fileref.Clip(fmt.Sprintf("%s:%d: %s", c.source, p.line, fmt.Sprintf(format, args...))))
	}
	return &node{kind: nullNode, pos: p}
}

func posOf(n ast.Node) pos {
	if n == nil {
		return pos{}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return pos{}
	}
	return pos{line: tk.Position.Line, col: tk.Position.Column}
}

// convert builds the node for n, counting it against the size budget and
// its mappings and lists against the nesting limit. Once c.err is set
// (over a limit, an unknown alias, an unsupported node) it returns null
// nodes and builds nothing more.
func (c *converter) convert(n ast.Node) *node {
	if n == nil {
		return &node{kind: nullNode}
	}
	p := posOf(n)
	if c.err != nil {
		return &node{kind: nullNode, pos: p} // stop building once over a limit
	}
	switch n.(type) {
	case *ast.MappingValueNode, *ast.MappingNode, *ast.SequenceNode:
		c.depth++
		defer func() { c.depth-- }()
		if c.depth > MaxNesting {
			return c.fail(p, "mappings and lists nested more than %d deep: a scenario needs a few levels; remove the extra nesting", MaxNesting)
		}
	case *ast.AnchorNode, *ast.AliasNode, *ast.TagNode:
	default:
		if !c.grow(p, 1, "a value") {
			return &node{kind: nullNode, pos: p}
		}
	}
	switch v := n.(type) {
	case *ast.NullNode:
		return &node{kind: nullNode, pos: p}
	case *ast.StringNode:
		return &node{kind: scalarNode, pos: p, text: v.Value}
	case *ast.LiteralNode:
		text := ""
		if v.Value != nil {
			text = v.Value.Value
		}
		return &node{kind: scalarNode, pos: p, text: strings.TrimRight(text, "\n")}
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return &node{kind: scalarNode, pos: p, text: n.GetToken().Value}
	case *ast.TagNode:
		return c.convert(v.Value)
	case *ast.AnchorNode:
		return c.convertAnchor(v)
	case *ast.AliasNode:
		return c.convertAlias(p, v)
	case *ast.MappingValueNode:
		if !c.grow(p, 1, "a mapping") {
			return &node{kind: nullNode, pos: p}
		}
		m := newMap(posOf(v.Key))
		c.addEntry(m, v)
		return m
	case *ast.MappingNode:
		return c.convertMapping(p, v)
	case *ast.SequenceNode:
		if !c.grow(p, 1, "a list") {
			return &node{kind: nullNode, pos: p}
		}
		s := &node{kind: seqNode, pos: p}
		for _, it := range v.Values {
			s.items = append(s.items, c.convert(it))
		}
		return s
	}
	return c.fail(p, "unsupported YAML node %s", n.Type())
}

// convertAnchor converts the anchored value and records it, with its node
// count, under the anchor's name for later aliases.
func (c *converter) convertAnchor(v *ast.AnchorNode) *node {
	val := c.convert(v.Value)
	if v.Name != nil {
		c.anchors[v.Name.GetToken().Value] = val
		c.sizes[val] = countNodes(val)
	}
	return val
}

// convertAlias returns a copy of the anchored value, charging its whole
// node count to the size budget; an alias before its anchor is an error.
func (c *converter) convertAlias(p pos, v *ast.AliasNode) *node {
	name := ""
	if v.Value != nil {
		name = v.Value.GetToken().Value
	}
	a, ok := c.anchors[name]
	if !ok {
		return c.fail(p, "alias *%s: no anchor &%s before it", name, name)
	}
	if !c.grow(p, c.sizes[a], "alias *"+name) {
		return &node{kind: nullNode, pos: p}
	}
	return a.clone()
}

// convertMapping builds a mapping positioned at its first key; merge keys
// (<<) are applied after the mapping's own entries, so those win.
func (c *converter) convertMapping(p pos, v *ast.MappingNode) *node {
	if !c.grow(p, 1, "a mapping") {
		return &node{kind: nullNode, pos: p}
	}
	m := newMap(p)
	if len(v.Values) > 0 {
		m.pos = posOf(v.Values[0].Key)
	}
	var merges []*ast.MappingValueNode
	for _, mv := range v.Values {
		if _, isMerge := mv.Key.(*ast.MergeKeyNode); isMerge {
			merges = append(merges, mv)
			continue
		}
		c.addEntry(m, mv)
	}
	for _, mv := range merges {
		c.merge(m, mv)
	}
	return m
}

func (c *converter) addEntry(m *node, mv *ast.MappingValueNode) {
	kp := posOf(mv.Key)
	if _, isMerge := mv.Key.(*ast.MergeKeyNode); isMerge {
		c.merge(m, mv)
		return
	}
	key := ""
	switch k := mv.Key.(type) {
	case *ast.StringNode:
		key = k.Value
	case *ast.MappingKeyNode:
		c.fail(kp, "complex mapping keys (?) are not supported")
		return
	default:
		if mv.Key != nil && mv.Key.GetToken() != nil {
			key = mv.Key.GetToken().Value
		}
	}
	if _, dup := m.vals[key]; dup {
		c.fail(kp, "key %q given twice in one mapping (first at line %d)", key, m.keyPos[key].line)
		return
	}
	m.put(key, c.convert(mv.Value), kp)
}

// merge applies a YAML merge key (<<: *anchor or a list of them): the
// merged mapping's keys are added where m does not have them.
func (c *converter) merge(m *node, mv *ast.MappingValueNode) {
	src := c.convert(mv.Value)
	var from []*node
	switch src.kind {
	case mapNode:
		from = []*node{src}
	case seqNode:
		from = src.items
	}
	for _, f := range from {
		if f.kind != mapNode {
			c.fail(posOf(mv.Key), "<< merges mappings only")
			return
		}
		for _, k := range f.keys {
			if _, ok := m.vals[k]; !ok {
				if !c.grow(posOf(mv.Key), countNodes(f.vals[k]), "merge <<") {
					return
				}
				m.put(k, f.vals[k].clone(), f.keyPos[k])
			}
		}
	}
}

func kindName(n *node) string {
	if n == nil {
		return "nothing"
	}
	switch n.kind {
	case nullNode:
		return "null"
	case scalarNode:
		return fmt.Sprintf("scalar %q", n.text)
	case mapNode:
		return "mapping"
	case seqNode:
		return "list"
	}
	return "?"
}
