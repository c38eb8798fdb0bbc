package checks

import (
	"testing"
	"time"

	"seckill-harness/history"
	"seckill-harness/lua"
	"seckill-harness/sut"
)

// I4's double acknowledgement is a consequence of I5 exactly when it is
// wholly made of another user's ACCEPTED answered to a reused request id:
// u2 reuses u1's request 5 and is answered u1's ACCEPTED o-r5, then
// reserves for real (o-r9); with a third reservation of u2's own (o-r10)
// the violation is I4's own. Judged from the answers alone (a service
// without records) and with the records read back.
func TestI4ConsequenceOfReusedRequestID(t *testing.T) {
	ack := func(id, user, req uint32, rid string) history.Op {
		return history.Op{ID: id, User: user, Req: req, RID: rid, Kind: history.KindFresh,
			Outcome: history.Outcome(lua.Accepted), Start: time.Duration(id) * time.Second, End: time.Duration(id)*time.Second + time.Millisecond}
	}
	reuse := []history.Op{ack(1, 1, 5, "o-r5"), ack(2, 2, 5, "o-r5"), ack(3, 2, 9, "o-r9")}
	own := append(append([]history.Op(nil), reuse...), ack(4, 2, 10, "o-r10"))
	plain := []history.Op{ack(1, 1, 5, "o-r5"), ack(2, 2, 9, "o-r9"), ack(3, 2, 10, "o-r10")}
	records := map[string]ReservationRecord{
		"o-r5": {Status: lua.StatusReserved, User: "u1"}, "o-r9": {Status: lua.StatusReleased, User: "u2"}, "o-r10": {Status: lua.StatusReserved, User: "u2"}}
	cases := []struct {
		name    string
		ops     []history.Op
		records bool
		want    string
		i5Fails bool
	}{
		{"reused request id, from the answers", reuse, false, "I5", true},
		{"reused request id, with the records", reuse, true, "I5", true},
		{"reuse and a second reservation of its own", own, false, "", true},
		{"two reservations of its own, no reuse", plain, false, "", false},
	}
	for _, c := range cases {
		f := &Facts{Planned: []int64{10}, Stock: []lua.Stock{{Initial: 10, Available: 10}}, Ops: c.ops,
			Unexposed: map[sut.Fact]bool{sut.Records: true}}
		if c.records {
			f.Unexposed, f.Records = map[sut.Fact]bool{}, records
		}
		i4 := judgeByID(t, f, "I4")
		if i4.Status != StatusFail || i4.ConsequenceOf != c.want {
			t.Errorf("%s: I4 %s consequence of %q (%s), want fail and %q", c.name, i4.Status, i4.ConsequenceOf, i4.Detail, c.want)
		}
		if i5 := judgeByID(t, f, "I5"); (i5.Status == StatusFail) != c.i5Fails {
			t.Errorf("%s: I5 %s (%s), want fail=%v", c.name, i5.Status, i5.Detail, c.i5Fails)
		}
	}
}
