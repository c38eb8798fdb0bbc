package history

import (
	"strings"
	"testing"
)

// A history line longer than any operation's record is named with the fix,
// not as bufio's "token too long".
func TestReadJSONLNamesALineTooLong(t *testing.T) {
	_, err := ReadJSONL(strings.NewReader(strings.Repeat("x", 2<<20) + "\n"))
	if err == nil || strings.Contains(err.Error(), "token too long") || !strings.Contains(err.Error(), "history line 1") || !strings.Contains(err.Error(), "give the history.jsonl") {
		t.Fatalf("a 2 MiB line: %v; want the line and the fix", err)
	}
}
