package faults

// Parameters: each kind declares its parameters once, in Spec.Params, with
// a name, a type, a default and a doc; Spec.New parses the given text into
// typed Values (refusing an unknown parameter or a bad value, naming it and
// what it wants) and hands them to the kind's Build, which reads each one
// through its declaration (Typed.Of) without naming it again.

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Param documents one parameter of a kind and says how its value is read.
type Param struct {
	Name    string
	Default string
	Help    string
	// Values, when set, are every value the parameter accepts (a closed
	// enum: New refuses any other); faults --json and shell completion
	// offer them.
	Values []string

	// parse reads a given, non-empty value (spaces trimmed); its error
	// says what the parameter wants. nil: the text as it is.
	parse func(v string) (any, error)
	// def is the value when the parameter is absent or empty (nil: the
	// text of Default).
	def any
}

// value is p's typed value for the text v (given: present in the params).
func (p Param) value(v string, given bool) (any, error) {
	v = strings.TrimSpace(v)
	if !given || v == "" {
		if p.def != nil {
			return p.def, nil
		}
		return p.Default, nil
	}
	if p.parse == nil {
		return v, nil
	}
	return p.parse(v)
}

// Typed is a parameter whose values are of type T; a kind reads its value
// with Of.
type Typed[T any] struct{ Param }

// Of is the parameter's value in v (its default when it was not given).
func (p Typed[T]) Of(v Values) T { return v.vals[p.Name].(T) }

// doc replaces the documented default (for a default that needs words).
func (p Typed[T]) doc(def string) Typed[T] {
	p.Default = def
	return p
}

// Values are a fault's parameters as its Spec.Params typed them.
type Values struct {
	vals  map[string]any
	given map[string]string
}

// Given reports whether the parameter was given (even empty), and its text.
func (v Values) Given(p Param) (string, bool) {
	s, ok := v.given[p.Name]
	return s, ok
}

// parseParams types params by decl: an unknown parameter or a bad value is
// an error naming it (parameters are judged in name order).
func parseParams(decl []Param, params map[string]string) (Values, error) {
	byName := make(map[string]Param, len(decl))
	for _, p := range decl {
		byName[p.Name] = p
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := byName[k]; !ok {
			return Values{}, fmt.Errorf("unknown parameter %q", k)
		}
	}
	v := Values{vals: make(map[string]any, len(decl)), given: map[string]string{}}
	for _, p := range decl {
		raw, given := params[p.Name]
		val, err := p.value(raw, given)
		if err != nil {
			return Values{}, fmt.Errorf("%s=%q: %w", p.Name, raw, err)
		}
		v.vals[p.Name] = val
		if given {
			v.given[p.Name] = raw
		}
	}
	return v, nil
}

// intParam is an integer in [lo, hi] (hi math.MaxInt64: no upper bound);
// unit names what it counts, for the error ("milliseconds"; "": none).
func intParam(name string, def, lo, hi int64, unit, help string) Typed[int64] {
	want := "want an integer"
	if unit != "" {
		want += " number of " + unit
	}
	if hi == math.MaxInt64 {
		want += fmt.Sprintf(" >= %d", lo)
	} else {
		want += fmt.Sprintf(" in [%d, %d]", lo, hi)
	}
	return Typed[int64]{Param{Name: name, Default: strconv.FormatInt(def, 10), Help: help, def: def,
		parse: func(v string) (any, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < lo || n > hi {
				return nil, errors.New(want)
			}
			return n, nil
		}}}
}

// durationParam is a non-negative Go duration ("500ms", or 0).
func durationParam(name string, def time.Duration, help string) Typed[time.Duration] {
	doc := def.String()
	if def == 0 {
		doc = "0"
	}
	return Typed[time.Duration]{Param{Name: name, Default: doc, Help: help, def: def,
		parse: func(v string) (any, error) {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, errors.New("want a non-negative duration like 500ms")
			}
			return d, nil
		}}}
}

// boolParam is true or false (any form strconv.ParseBool reads).
func boolParam(name string, def bool, help string) Typed[bool] {
	return Typed[bool]{Param{Name: name, Default: strconv.FormatBool(def), Help: help, def: def,
		parse: func(v string) (any, error) {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, errors.New("want true or false")
			}
			return b, nil
		}}}
}

// enumParam is one of values (documented as the parameter's Values).
func enumParam(name, def, help string, values ...string) Typed[string] {
	want := "want " + strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
	return choiceParam(name, def, help, want, values...)
}

// choiceParam is enumParam whose error says want.
func choiceParam(name, def, help, want string, values ...string) Typed[string] {
	return Typed[string]{Param{Name: name, Default: def, Help: help, Values: values, def: def,
		parse: func(v string) (any, error) {
			for _, ok := range values {
				if v == ok {
					return v, nil
				}
			}
			return nil, errors.New(want)
		}}}
}

// textParam is a text that check accepts (nil: any).
func textParam(name, def, help string, check func(string) error) Typed[string] {
	p := Typed[string]{Param{Name: name, Default: def, Help: help, def: def}}
	if check != nil {
		p.parse = func(v string) (any, error) { return v, check(v) }
	}
	return p
}
