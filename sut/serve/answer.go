package serve

import (
	"encoding/json"
	"net/http"

	"seckill-harness/lua"
)

// The codes of the contract that are not reserve.lua's.
const (
	CodeInvalid        = "INVALID"
	CodeSystemBusy     = "SYSTEM_BUSY"
	CodeOutcomeUnknown = "OUTCOME_UNKNOWN"
	CodeNotFound       = "NOT_FOUND"
	// CodeFailed is only answered by the timeout-is-failure defect.
	CodeFailed = "FAILED"
)

// SourceLocalFlag is Answer.Source on a SOLD_OUT of the local sold-out flag.
const SourceLocalFlag = "local_flag"

// Answer is the body of every reply of /v1/reserve and of the query
// endpoint (docs/SERVICE.md). Message and Source are additive: a
// human-readable reason on INVALID, SYSTEM_BUSY and OUTCOME_UNKNOWN, and
// where a SOLD_OUT came from.
type Answer struct {
	Code          string  `json:"code"`
	RequestID     string  `json:"request_id"`
	ReservationID string  `json:"reservation_id,omitempty"`
	Retryable     bool    `json:"retryable"`
	Bucket        *uint32 `json:"bucket,omitempty"`
	Message       string  `json:"message,omitempty"`
	// Source is "local_flag" on a SOLD_OUT the local sold-out flag gave
	// without asking Redis (additive: lets a client tell it from Redis's).
	Source string `json:"source,omitempty"`

	status int // the HTTP status
}

// ReleaseAnswer is the body of /v1/release's reply.
type ReleaseAnswer struct {
	Code          string `json:"code"`
	ReservationID string `json:"reservation_id"`
	Retryable     bool   `json:"retryable"`
	Status        string `json:"status,omitempty"`
	Message       string `json:"message,omitempty"`
}

// business is the answer of a reserve.lua code (or a cached result):
// definitive, HTTP 200.
func business(reqID string, code lua.ReserveCode, rid string, bucket uint32) Answer {
	a := Answer{Code: code.String(), RequestID: reqID, Bucket: &bucket, status: http.StatusOK}
	if code == lua.Accepted || code == lua.UserAlreadyReserved {
		a.ReservationID = rid
	}
	return a
}

// busy is SYSTEM_BUSY: fail closed, retryable, nothing reserved.
func busy(reqID, why string) Answer {
	return Answer{Code: CodeSystemBusy, RequestID: reqID, Retryable: true, Message: why, status: http.StatusServiceUnavailable}
}

// unknown is OUTCOME_UNKNOWN: re-send the same request_id or query it.
func unknown(reqID, why string) Answer {
	return Answer{Code: CodeOutcomeUnknown, RequestID: reqID, Retryable: true, Message: why, status: http.StatusGatewayTimeout}
}

// invalid is INVALID: a malformed request, not retryable.
func invalid(reqID, why string) Answer {
	return Answer{Code: CodeInvalid, RequestID: reqID, Message: why, status: http.StatusBadRequest}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a Answer) write(w http.ResponseWriter) {
	st := a.status
	if st == 0 {
		st = http.StatusOK
	}
	writeJSON(w, st, a)
}

// jsonUnmarshal decodes one JSON object; unknown fields are ignored.
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
