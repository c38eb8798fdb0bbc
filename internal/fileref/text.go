package fileref

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxToken is the most of one token of a file an error quotes, in bytes.
const MaxToken = 32

// Clip shortens every quoted string in msg ("…" or `…`, as %q writes
// them) whose text is longer than MaxToken to its first MaxToken bytes,
// marked cut and followed by its full length: `"abc…" (70 bytes)`. The
// error constructors of the file decoders run their messages through it,
// so no error quotes more than MaxToken bytes of any one value.
func Clip(msg string) string {
	if !strings.ContainsAny(msg, "\"`") {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		c := msg[i]
		if c != '"' && c != '`' {
			b.WriteByte(c)
			i++
			continue
		}
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			b.WriteByte(c)
			i++
			continue
		}
		i += len(q)
		text, err := strconv.Unquote(q)
		if err != nil || len(text) <= MaxToken {
			b.WriteString(q)
			continue
		}
		b.WriteString(Token(text))
	}
	return b.String()
}

// Cut is s cut to MaxToken bytes (at a character boundary), marked "…"
// when cut: for a key of a file written unquoted, as in a field path.
func Cut(s string) string {
	if len(s) <= MaxToken {
		return s
	}
	cut := MaxToken
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Token quotes s as %q does, cut to MaxToken bytes (at a character
// boundary) when longer: `"abc…" (70 bytes)`.
func Token(s string) string {
	if len(s) <= MaxToken {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(Cut(s)), len(s))
}

// CheckText refuses data that cannot be a YAML text: a control byte (other
// than tab, line feed and carriage return) such as the NULs of
// /proc/*/environ. The error names file, what it should be and the line of
// the first such byte, and quotes nothing of it.
func CheckText(file string, data []byte, what string) error {
	line := 1
	for _, c := range data {
		switch {
		case c == '\n':
			line++
		case c == '\t' || c == '\r':
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("%s:%d: not a YAML text file (it holds the control byte 0x%02x): give %s", file, line, c, what)
		}
	}
	return nil
}

// NotMapping is the error for a file that parsed as YAML but is not a
// mapping at the top (line: where its value starts): it names the file
// and quotes none of it. want says what the file should be ("a scenario
// file (name:, phases:, …)").
func NotMapping(file string, line int, want string) error {
	return fmt.Errorf("%s:%d: not a YAML mapping: give %s", file, line, want)
}

// SyntaxError is the error for a file that is not valid YAML: the parser's
// message, clipped, at file:line (line 0: unknown), and the fix; no excerpt
// of the file.
func SyntaxError(file string, line int, message string) error {
	if line <= 0 {
		return fmt.Errorf("%s is not valid YAML: %s: fix the YAML", file, Clip(message))
	}
	return fmt.Errorf("%s:%d: YAML syntax: %s: fix the YAML at that line", file, line, Clip(message))
}
