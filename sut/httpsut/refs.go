package httpsut

import (
	"fmt"
	"slices"
	"strings"
)

// templateRefs is the one reader of a mapping's ${name} references: it
// returns the text outside them and refuses an unclosed ${ (naming
// example as the form to write) or a name not in allowed (the error says
// what where may name, and why when given).
func templateRefs(text, example, where string, allowed []string, why string) (literal string, err error) {
	var lit strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			lit.WriteString(rest)
			return lit.String(), nil
		}
		lit.WriteString(rest[:i])
		j := strings.Index(rest[i:], "}")
		if j < 0 {
			return "", fmt.Errorf("%q: unclosed ${ (write ${%s}, say)", text, example)
		}
		if n := rest[i+2 : i+j]; !slices.Contains(allowed, n) {
			return "", fmt.Errorf("bad reference ${%s}: the values %s may name are %s%s", n, where, strings.Join(allowed, ", "), why)
		}
		rest = rest[i+j+1:]
	}
}
