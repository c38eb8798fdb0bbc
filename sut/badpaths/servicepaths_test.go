package badpaths

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"seckill-harness/internal/clustertest"
	"seckill-harness/lua"
	"seckill-harness/sut"
	"seckill-harness/sut/httpsut"
)

// A service row's system starts nothing when built, starts the in-process
// service in Setup (on the store's cluster, with the store's secret: the
// reservation id it answers is the one the harness derives), speaks to it
// over HTTP, and Close stops it: its port no longer answers, and a second
// Close is a no-op.
func TestServicePathStartsInSetupAndStopsOnClose(t *testing.T) {
	clustertest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := lua.NewStore(testRDB, nil, testSecret)
	sys := newServicePath(ServeFailOpen)(st).(*ServicePath)
	if sys.Unwrap() != nil {
		t.Fatal("the service runs before Setup")
	}
	if _, err := sys.Reserve(ctx, lua.ReserveCall{}); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("reserve before Setup: %v", err)
	}
	a := lua.NewActivity(fmt.Sprintf("bpsvc%d", time.Now().UnixMilli()), "sku1", 5, 1, time.Hour)
	if err := sys.Setup(ctx, a); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = sys.Teardown(context.Background(), a) }()
	hs, ok := sut.Ability[*httpsut.System](sys)
	if !ok {
		t.Fatal("the started service path does not unwrap to its HTTP system")
	}
	call, err := st.NewReserveCall(a, "u1", "r1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sys.Reserve(ctx, call)
	if err != nil || res.Code != lua.Accepted || res.ReservationID != st.ReservationIDFor(a, "u1", "r1") {
		t.Fatalf("reserve through the service: %+v %v; want ACCEPTED with the harness's reservation id", res, err)
	}
	addr := strings.TrimPrefix(hs.URL(), "http://")
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("the service still listens on %s after Close", addr)
	}
	if err := sys.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
