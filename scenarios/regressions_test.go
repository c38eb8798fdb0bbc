package scenarios

import (
	"strings"
	"testing"
)

func TestRegressions(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nregressions: {p99: 20%, throughput: 7.5%, p50: off}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("valid regressions refused: %v", err)
	}
	if s.Regressions["p99"] != 0.2 || s.Regressions["throughput"] != 0.075 || s.Regressions["p50"] != -1 {
		t.Fatalf("Regressions = %v", s.Regressions)
	}
	if rm, ok := s.Resolved()["regressions"].(map[string]any); !ok || rm["p99"] != "20%" {
		t.Errorf("resolved regressions %v", s.Resolved()["regressions"])
	}
	if err := s.Set("regressions.p999=50%"); err != nil {
		t.Fatalf("--set regressions.p999=50%%: %v", err)
	}
	if s.Regressions["p999"] != 0.5 {
		t.Errorf("after --set: %v", s.Regressions)
	}
	bad := "name: t\nregressions:\n  p99: 0.2\n  latency: 10%\n  throughput: -5%\n"
	s, err = Parse("bad.yaml", []byte(bad))
	if err == nil {
		err = s.Validate()
	}
	if err == nil {
		t.Fatal("bad regressions accepted")
	}
	for _, want := range []string{"bad.yaml:3", `"0.2": want a percentage`, "bad.yaml:4", `"latency": unknown figure; valid: p50, p99, p999, service_p50, service_p99, throughput, or one of p50, p99, p999, throughput of a phase`, "bad.yaml:5", `"-5%"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
