package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// ServiceSection is report.json's service: a service under test as the
// harness's HTTP client saw it.
type ServiceSection struct {
	// URL is the service's URL.
	URL string `json:"url"`
	// Policy is the client's timeout and retry policy, in words.
	Policy string `json:"policy"`
	// TimeoutMs is the per-request deadline; Resends and BackoffMs the
	// retry policy (the same request_id re-sent after UNKNOWN or SYSTEM_BUSY).
	TimeoutMs float64 `json:"timeout_ms"`
	Resends   int     `json:"resends"`
	BackoffMs float64 `json:"backoff_ms"`
	// Answers counts the answers by meaning (ACCEPTED, SOLD_OUT,
	// SYSTEM_BUSY, OUTCOME_UNKNOWN, …); Timeouts the requests that got no
	// answer within the deadline (UNKNOWN to the harness).
	Answers  map[string]int64 `json:"answers"`
	Timeouts int64            `json:"timeouts"`
	// Queries are the look-ups of UNKNOWN outcomes through the query
	// endpoint; Resolved those that told what became of the request.
	Queries  int64 `json:"queries"`
	Resolved int64 `json:"resolved_by_query"`
	// Vegeta is vegeta's metrics over every HTTP request (submits, queries,
	// releases): status codes, bytes in and out, success ratio and its
	// latencies, timed from each request's actual send (the harness's own
	// latency_ms is timed from the intended start).
	Vegeta *vegeta.Metrics `json:"vegeta"`
}

// Line is the section in one line (text and HTML reports): the answers
// by meaning, the timeouts and look-ups, the client's policy, and
// vegeta's view of the requests.
func (s *ServiceSection) Line() string {
	if s == nil {
		return ""
	}
	out := "answers " + countsLine(s.Answers)
	if s.Timeouts > 0 {
		out += fmt.Sprintf(", %d without an answer within the deadline (UNKNOWN)", s.Timeouts)
	}
	if s.Queries > 0 {
		out += fmt.Sprintf(", %d UNKNOWN looked up (%d resolved)", s.Queries, s.Resolved)
	}
	if v := s.Vegeta; v != nil && v.Requests > 0 {
		out += fmt.Sprintf(" · vegeta: %d requests, success %.2f%%, status %s, bytes in %d out %d, latency from the actual send p50 %s p99 %s max %s",
			v.Requests, v.Success*100, countsLine(toInt64(v.StatusCodes)), v.BytesIn.Total, v.BytesOut.Total,
			v.Latencies.P50.Round(time.Microsecond), v.Latencies.P99.Round(time.Microsecond), v.Latencies.Max.Round(time.Microsecond))
	}
	return out + " · client: " + s.Policy
}

func toInt64(m map[string]int) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

func countsLine(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
