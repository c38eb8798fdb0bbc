package adapter

// topLevel scans Lua source s from i (just inside an opening bracket),
// skipping quoted strings (with their backslash escapes) and nested
// bracketed groups — ( ), { }, [ ] — and calls comma (when not nil) with
// the index of every comma at the top level. It returns the index of the
// bracket that closes the group it started in, or -1 when s ends first.
// The one scanner of the adapter's reading of scripts: the recorder finds
// a redis.call's closing parenthesis with it, the lint and init split
// argument lists with it.
func topLevel(s string, i int, comma func(at int)) int {
	depth := 0
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			if depth == 0 {
				return i
			}
			depth--
		case c == ',' && depth == 0 && comma != nil:
			comma(i)
		}
	}
	return -1
}

// closeParen is the index of the bracket that closes the group s[i:] is
// inside (-1: none).
func closeParen(s string, i int) int { return topLevel(s, i, nil) }

// splitTop splits a Lua argument list at top-level commas, stopping at
// the bracket that closes it.
func splitTop(s string) []string {
	var out []string
	start := 0
	end := topLevel(s, 0, func(at int) {
		out = append(out, s[start:at])
		start = at + 1
	})
	if end < 0 {
		end = len(s)
	}
	return append(out, s[start:end])
}
