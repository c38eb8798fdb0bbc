package scenarios

import (
	"slices"
	"strings"
	"testing"
)

func TestTolerateEvents(t *testing.T) {
	ok := "name: t\ntolerate_events: [automatic-failover, full-resync]\n"
	s, err := Parse("t.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("valid kinds refused: %v", err)
	}
	if !slices.Equal(s.TolerateEvents, []string{"automatic-failover", "full-resync"}) {
		t.Fatalf("TolerateEvents = %v", s.TolerateEvents)
	}
	if got := s.Resolved()["tolerate_events"]; got == nil {
		t.Error("resolved scenario lacks tolerate_events")
	}
	bad := "name: t\ntolerate_events:\n  - failover\n  - auto-failover\n  - failover\n"
	s, err = Parse("bad.yaml", []byte(bad))
	if err == nil {
		err = s.Validate()
	}
	if err == nil {
		t.Fatal("unknown and repeated kinds accepted")
	}
	for _, want := range []string{"bad.yaml:4", `"auto-failover": unknown event kind; valid kinds: automatic-failover`, "bad.yaml:5", "listed twice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
