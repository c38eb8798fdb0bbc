package reports

import (
	"strings"
	"testing"
)

// A latency.hgrm line over 1 MiB is named with the fix, not as bufio's
// "token too long".
func TestReadHGRMNamesALineTooLong(t *testing.T) {
	_, err := ReadHGRM(strings.NewReader(strings.Repeat("x", 2<<20) + "\n"))
	if err == nil || strings.Contains(err.Error(), "token too long") || !strings.Contains(err.Error(), "give the run directory") {
		t.Fatalf("a 2 MiB line: %v; want the fix", err)
	}
}
