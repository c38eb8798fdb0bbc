package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxStructFields is the most fields a struct type may have. A struct
// wider than this carries state for several concerns at once: group the
// fields into a struct per concern (each with its own lock, when it needs
// one) and hold those.
const maxStructFields = 25

// wideStructsAllowed are the struct types (file/Type) allowed to be wider
// than maxStructFields, each with why. Only JSON wire mirrors belong here:
// their fields are a published contract (report.json and the files written
// beside it), one field per key, so grouping them would rename or nest keys
// users and their tools read.
var wideStructsAllowed = map[string]string{
	"reports/report.go/Report":        "report.json's top level: one field per documented key",
	"runner/compare/capacity.go/Step": "capacity.json's steps[]: one field per key",
	"runner/compare/row.go/Run":       "compare.json's rows (embedded in Row, so its keys are the row's own): one field per key",
}

// TestNoStructOverTwentyFiveFields parses every non-test Go file of the
// repository and fails for each struct type with more than maxStructFields
// fields (a declaration `a, b int` counts two) that wideStructsAllowed does
// not name. An anonymous struct is named after its enclosing declaration.
func TestNoStructOverTwentyFiveFields(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	var wide []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for name, n := range structFieldCounts(f) {
			key := filepath.ToSlash(path) + "/" + name
			seen[key] = true
			if n <= maxStructFields {
				continue
			}
			if why, ok := wideStructsAllowed[key]; ok {
				t.Logf("%s: %d fields, allowed: %s", key, n, why)
				continue
			}
			wide = append(wide, key+": "+strconv.Itoa(n)+" fields")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(wide)
	for _, w := range wide {
		t.Errorf("%s (over %d: group them into a struct per concern, or, for a JSON wire mirror, name it with why in wideStructsAllowed)", w, maxStructFields)
	}
	for key := range wideStructsAllowed {
		if !seen[key] {
			t.Errorf("wideStructsAllowed names %s, which no longer exists: remove it", key)
		}
	}
}

// structFieldCounts maps each struct type of f to its number of fields:
// "Type" for a named type, "Type.field" or "Func.var" for an anonymous
// struct inside a declaration (numbered when one declaration holds several).
func structFieldCounts(f *ast.File) map[string]int {
	out := map[string]int{}
	for _, decl := range f.Decls {
		owner := declName(decl)
		ast.Inspect(decl, func(n ast.Node) bool {
			var name string
			var st *ast.StructType
			switch n := n.(type) {
			case *ast.TypeSpec:
				if s, ok := n.Type.(*ast.StructType); ok {
					name, st = n.Name.Name, s
				}
			case *ast.StructType:
				name, st = owner+".anon", n
			}
			if st == nil {
				return true
			}
			if _, dup := out[name]; dup || name == "" {
				name += "@" + strconv.Itoa(len(out))
			}
			if _, counted := out[name]; !counted {
				out[name] = fieldCount(st)
			}
			// Named types are counted at the TypeSpec: do not count their
			// StructType again as an anonymous one.
			if _, ok := n.(*ast.TypeSpec); ok {
				ast.Inspect(st, func(m ast.Node) bool {
					if inner, ok := m.(*ast.StructType); ok && inner != st {
						out[name+".anon@"+strconv.Itoa(len(out))] = fieldCount(inner)
					}
					return true
				})
				return false
			}
			return true
		})
	}
	return out
}

func fieldCount(st *ast.StructType) int {
	n := 0
	for _, fl := range st.Fields.List {
		if len(fl.Names) == 0 {
			n++ // embedded
		}
		n += len(fl.Names)
	}
	return n
}

func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) > 0 {
			return exprName(d.Recv.List[0].Type) + "." + d.Name.Name
		}
		return d.Name.Name
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				if len(s.Names) > 0 {
					return s.Names[0].Name
				}
			case *ast.TypeSpec:
				return s.Name.Name
			}
		}
	}
	return "decl"
}

func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return exprName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return exprName(e.X)
	}
	return "recv"
}
