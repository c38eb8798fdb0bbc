package adapter

import "strings"

// skipLua returns the index just past the comment or string literal that
// starts at s[i] (a -- comment to the end of its line, a --[[ ]] or
// --[==[ ]==] long comment, a quoted string with its backslash escapes,
// a [[ ]] or [==[ ]==] long string), or i when none starts there. An
// unterminated one ends with s.
func skipLua(s string, i int) int {
	switch {
	case strings.HasPrefix(s[i:], "--"):
		if n := longBracket(s, i+2); n > 0 {
			return closeLong(s, i+2, n)
		}
		if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
			return i + j
		}
		return len(s)
	case s[i] == '"' || s[i] == '\'':
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case s[i]:
				return j + 1
			}
		}
		return len(s)
	case s[i] == '[':
		if n := longBracket(s, i); n > 0 {
			return closeLong(s, i, n)
		}
	}
	return i
}

// longBracket is the length of the opening long bracket ([[, [=[, …) at
// s[i], 0 when there is none.
func longBracket(s string, i int) int {
	if i >= len(s) || s[i] != '[' {
		return 0
	}
	j := i + 1
	for j < len(s) && s[j] == '=' {
		j++
	}
	if j < len(s) && s[j] == '[' {
		return j - i + 1
	}
	return 0
}

// closeLong is the index past the long bracket that closes the one of
// length n opened at s[i] (len(s) when it is not closed).
func closeLong(s string, i, n int) int {
	end := "]" + strings.Repeat("=", n-2) + "]"
	if j := strings.Index(s[i+n:], end); j >= 0 {
		return i + n + j + len(end)
	}
	return len(s)
}

// topLevel scans Lua source s from i (just inside an opening bracket),
// skipping comments and string literals (skipLua) and nested bracketed
// groups — ( ), { }, [ ] — and calls comma (when not nil) with the index
// of every comma at the top level. It returns the index of the bracket
// that closes the group it started in, or -1 when s ends first. The one
// scanner of the adapter's reading of scripts: the recorder finds a
// redis.call's closing parenthesis with it, the lint and init split
// argument lists with it, and the command scan (commands.go) reads
// comments and strings out of the code with skipLua.
func topLevel(s string, i int, comma func(at int)) int {
	depth := 0
	for i < len(s) {
		if j := skipLua(s, i); j > i {
			i = j
			continue
		}
		c := s[i]
		switch {
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
		i++
	}
	return -1
}

// codeOnly is s with the text of its comments and string literals
// replaced by spaces (newlines kept, the quotes and brackets of a string
// kept), so that a search for code finds none inside them and its
// indexes and lines are s's.
func codeOnly(s string) string {
	b := []byte(s)
	for i := 0; i < len(s); {
		j := skipLua(s, i)
		if j == i {
			i++
			continue
		}
		inner0, inner1 := i, j
		if s[i] == '"' || s[i] == '\'' {
			inner0, inner1 = i+1, max(i+1, j-1)
		}
		for k := inner0; k < inner1; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = j
	}
	return string(b)
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
