package adapter

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const schemaPath = "../../docs/adapter.schema.json"

func readSchema(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// resolve follows a local $ref ("#/$defs/x").
func resolve(root, s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		s = root["$defs"].(map[string]any)[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	}
}

func hasType(s map[string]any, want string) bool {
	switch v := s["type"].(type) {
	case string:
		return v == want
	case []any:
		for _, x := range v {
			if x == want {
				return true
			}
		}
	}
	return false
}

// inStep compares Go type typ with schema s at path, both ways.
func inStep(t *testing.T, root, s map[string]any, typ reflect.Type, path string) {
	s = resolve(root, s)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.String:
		if !hasType(s, "string") {
			t.Errorf("%s: the model has a string, the schema %v", path, s["type"])
		}
	case reflect.Int:
		if !hasType(s, "integer") {
			t.Errorf("%s: the model has an integer, the schema %v", path, s["type"])
		}
	case reflect.Slice:
		if !hasType(s, "array") {
			t.Errorf("%s: the model has a list, the schema %v", path, s["type"])
			return
		}
		inStep(t, root, s["items"].(map[string]any), typ.Elem(), path+"[]")
	case reflect.Map:
		add, ok := s["additionalProperties"].(map[string]any)
		if !hasType(s, "object") || !ok {
			t.Errorf("%s: the model has a map, the schema no object of free keys", path)
			return
		}
		inStep(t, root, add, typ.Elem(), path+".*")
	case reflect.Struct:
		structInStep(t, root, s, typ, path)
	}
}

func structInStep(t *testing.T, root, s map[string]any, typ reflect.Type, path string) {
	if !hasType(s, "object") || s["additionalProperties"] != false {
		t.Errorf("%s: the schema must be an object with additionalProperties: false", path)
	}
	props, _ := s["properties"].(map[string]any)
	var wantReq, gotReq []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		if required(f) {
			wantReq = append(wantReq, name)
		}
		p, ok := props[name].(map[string]any)
		if !ok {
			t.Errorf("%s.%s: in the model, not in the schema", path, name)
			continue
		}
		inStep(t, root, p, f.Type, path+"."+name)
	}
	for name := range props {
		if fieldIndex(typ, name) < 0 {
			t.Errorf("%s.%s: in the schema, not in the model", path, name)
		}
	}
	for _, r := range asList(s["required"]) {
		gotReq = append(gotReq, r)
	}
	sort.Strings(wantReq)
	sort.Strings(gotReq)
	if strings.Join(wantReq, ",") != strings.Join(gotReq, ",") {
		t.Errorf("%s: required in the model %v, in the schema %v", path, wantReq, gotReq)
	}
}

func asList(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

// docs/adapter.schema.json describes exactly the model's fields, types and
// required parts, and exactly the outcome names the loader accepts.
func TestSchemaInStepWithModel(t *testing.T) {
	root := readSchema(t)
	inStep(t, root, root, reflect.TypeOf(File{}), "$")
	reply := resolve(root, root["$defs"].(map[string]any)["reply"].(map[string]any))
	names := asList(reply["properties"].(map[string]any)["outcomes"].(map[string]any)["propertyNames"].(map[string]any)["enum"])
	var want []string
	for _, o := range append(reserveOutcomes(), releaseOutcomes()...) {
		if !hasString(want, string(o)) {
			want = append(want, string(o))
		}
	}
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("outcome names: schema %v, loader %v", names, want)
	}
}

func hasString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("adapter.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("adapter.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func asInstance(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// Every example validates against the schema; broken files whose fault is
// the file's shape are refused by it too.
func TestExamplesMatchSchema(t *testing.T) {
	s := compileSchema(t)
	files, _ := filepath.Glob("../../docs/adapters/*.yaml")
	for _, p := range files {
		if err := s.Validate(asInstance(t, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, name := range []string{"unknown-field", "unknown-top", "wrong-type-list", "wrong-type-map", "missing-reply",
		"missing-reserve", "missing-outcomes", "unknown-outcome", "empty-outcome", "setup-empty-command"} {
		if err := s.Validate(asInstance(t, "testdata/broken/"+name+".yaml")); err == nil {
			t.Errorf("%s.yaml: the schema accepts it", name)
		}
	}
}
