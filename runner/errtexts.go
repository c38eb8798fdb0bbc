package runner

import (
	"sync"

	"seckill-harness/history"
)

// errTextsPerClass bounds the error texts kept per class: the first few
// distinct ones say what went wrong; the count is in the history.
const errTextsPerClass = 3

// errorTexts keeps the first distinct error texts of each class, so a
// report can say *why* operations ended in ERROR (a script's syntax error,
// NOPERM, a wrong return shape) at O(1) memory whatever the error count.
type errorTexts struct {
	mu    sync.Mutex
	texts map[string][]string
}

// note records err's text under class c when it is one of the first
// distinct texts of that class.
func (t *errorTexts) note(c history.ErrClass, err error) {
	if err == nil || c == history.ErrNone {
		return
	}
	msg := err.Error()
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.texts == nil {
		t.texts = map[string][]string{}
	}
	k := c.String()
	for _, s := range t.texts[k] {
		if s == msg {
			return
		}
	}
	if len(t.texts[k]) < errTextsPerClass {
		t.texts[k] = append(t.texts[k], msg)
	}
}

// snapshot returns a copy: class name -> first distinct texts.
func (t *errorTexts) snapshot() map[string][]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string][]string, len(t.texts))
	for k, v := range t.texts {
		out[k] = append([]string(nil), v...)
	}
	return out
}
