package httpsut

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// answer is one decoded answer of the service.
type answer struct {
	Status    int
	Code      string // the body's code ("" when it has none)
	Meaning   string // what the code (or, without one, the status) means
	RID       string
	RequestID string
	Retryable bool
	HasRetry  bool // the body carried the retryable field
	Local     bool // the source field says the service's local flag answered
}

// decode reads an answer's JSON body through the mapping's field names;
// table maps its code to a meaning. A body that is not JSON, or has no
// code, is judged by its status.
func (m *Mapping) decode(status int, body []byte, table map[string]string) (answer, error) {
	a := answer{Status: status}
	if len(body) > maxAnswerBytes {
		return a, fmt.Errorf("HTTP %d answer longer than %d KiB, the most the harness reads of one answer: refused unread (an answer of the HTTP contract is a small JSON object)", status, maxAnswerBytes>>10)
	}
	var doc map[string]any
	if len(body) > 0 && json.Unmarshal(body, &doc) == nil {
		a.Code = text(field(doc, m.Answer.Code))
		a.RID = text(field(doc, m.Answer.ReservationID))
		a.RequestID = text(field(doc, m.Answer.RequestID))
		a.Local = m.Answer.Source != "" && text(field(doc, m.Answer.Source)) == m.Answer.LocalSource
		if v, ok := field(doc, m.Answer.Retryable).(bool); ok {
			a.Retryable, a.HasRetry = v, true
		}
	}
	if a.Code != "" {
		mean, ok := table[a.Code]
		if !ok {
			return a, fmt.Errorf("HTTP %d answered code %q, which the service mapping does not map: add it to codes: (docs/SERVICE.md)", status, a.Code)
		}
		a.Meaning = mean
		return a, nil
	}
	if mean, ok := m.Statuses[strconv.Itoa(status)]; ok {
		a.Meaning = mean
		return a, nil
	}
	if status >= 500 {
		a.Meaning = Unknown // the service (or a proxy before it) may have run the request
		return a, nil
	}
	return a, fmt.Errorf("HTTP %d without a code in %s: the service mapping says nothing of it (answer.code, statuses:)", status, snippet(body))
}

// field reads a dotted path of doc (nil when absent).
func field(doc map[string]any, path string) any {
	if path == "" {
		return nil
	}
	var cur any = doc
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

func snippet(b []byte) string {
	if len(b) > 120 {
		return fmt.Sprintf("%q…", b[:120])
	}
	return fmt.Sprintf("%q", b)
}
