package serve

import (
	"fmt"
	"sort"
	"strings"
)

// Defect is a known-wrong behaviour the service can be started with
// (--defect NAME): a negative control the harness's checks must catch.
type Defect string

// The defects. Each is small and shows from outside (Defects says how).
const (
	DefectNewRequestIDOnTimeout Defect = "new-request-id-on-timeout"
	DefectFailOpen              Defect = "fail-open"
	DefectTimeoutIsFailure      Defect = "timeout-is-failure"
	DefectRetryWithoutIDs       Defect = "retry-without-ids"
	DefectBypassToDB            Defect = "bypass-to-db"
	DefectQueryHidesReleased    Defect = "query-hides-released"
)

// DefectInfo is one row of the defect table.
type DefectInfo struct {
	Name Defect
	// Does is the wrong behaviour.
	Does string
	// Shows is what it leaves for an outside observer to see.
	Shows string
}

// Defects is the table of defects, the one place they are named.
var Defects = []DefectInfo{
	{DefectNewRequestIDOnTimeout,
		"after a Redis timeout the internal re-send carries a NEW request_id (same reservation_id)",
		"the answer's request_id is not the one sent; Redis holds a request result for a request_id no client sent"},
	{DefectFailOpen,
		"when Redis is unreachable (connection refused, CLUSTERDOWN, node circuit open) it answers ACCEPTED from a process-local counter",
		"ACCEPTED answers while a slot has no master, with no reservation record in Redis (the query says NOT_FOUND)"},
	{DefectTimeoutIsFailure,
		`a Redis timeout is answered as a definitive failure {"code":"FAILED","retryable":false} and the reservation is compensated at once`,
		"FAILED with retryable=false for a request that may have run; its reservation RELEASED with reason timeout-is-failure"},
	{DefectRetryWithoutIDs,
		"every internal re-send (after a timeout or a redirect) carries a new request_id AND a new reservation_id",
		"the answer's request_id and reservation_id are not the sent request's; Redis holds a request result and a reservation nobody asked for"},
	{DefectBypassToDB,
		"when Redis is unreachable it writes the order straight into the pipeline's PostgreSQL (--pg / $" + EnvPGURL + ") and answers ACCEPTED",
		"an order in PostgreSQL that no message brought to the order stage, with no reservation in Redis"},
	{DefectQueryHidesReleased,
		"the query endpoint answers 404 NOT_FOUND for a request whose reservation was released, instead of the request's answer on record",
		"a request answered ACCEPTED is later queried NOT_FOUND, which tells its client it never ran; the end state is right"},
}

// DefectSet is the defects turned on.
type DefectSet map[Defect]bool

// Has reports whether d is on.
func (s DefectSet) Has(d Defect) bool { return s[d] }

// Names lists the defects on, sorted.
func (s DefectSet) Names() []string {
	var out []string
	for d, on := range s {
		if on {
			out = append(out, string(d))
		}
	}
	sort.Strings(out)
	return out
}

// String is the defects on as a comma list, or "none".
func (s DefectSet) String() string {
	if n := s.Names(); len(n) > 0 {
		return strings.Join(n, ",")
	}
	return "none"
}

// DefectNames lists every known defect's name, in the table's order.
func DefectNames() []string {
	out := make([]string, len(Defects))
	for i, d := range Defects {
		out[i] = string(d.Name)
	}
	return out
}

// ParseDefects reads --defect values (each a name or a comma list). An
// unknown name is an error naming the known ones.
func ParseDefects(vals []string) (DefectSet, error) {
	set := DefectSet{}
	known := map[Defect]bool{}
	for _, d := range Defects {
		known[d.Name] = true
	}
	for _, v := range vals {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n == "" {
				continue
			}
			if !known[Defect(n)] {
				return nil, fmt.Errorf("--defect %q: unknown defect; known defects: %s", n, strings.Join(DefectNames(), ", "))
			}
			set[Defect(n)] = true
		}
	}
	return set, nil
}
