package servicechild

import (
	"strings"
	"sync"
)

// tailBuffer keeps the last n lines written to it.
type tailBuffer struct {
	mu      sync.Mutex
	n       int
	lines   []string
	partial string
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

// Write implements io.Writer.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	parts := strings.Split(t.partial+string(p), "\n")
	t.partial = parts[len(parts)-1]
	t.lines = append(t.lines, parts[:len(parts)-1]...)
	if over := len(t.lines) - t.n; over > 0 {
		t.lines = append([]string(nil), t.lines[over:]...)
	}
	return len(p), nil
}

// Lines returns the last lines (an unterminated last line included).
func (t *tailBuffer) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if t.partial != "" {
		out = append(out, t.partial)
	}
	if over := len(out) - t.n; over > 0 {
		out = out[over:]
	}
	return out
}
