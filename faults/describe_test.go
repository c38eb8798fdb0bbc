package faults

import "testing"

// Every value a parameter lists is one its kind accepts, and the list is
// closed: a value outside it is refused (so completion and faults --json
// never offer a value New refuses, nor hide one it takes).
func TestParamValuesAreExactlyWhatNewAccepts(t *testing.T) {
	seen := 0
	for _, s := range Kinds() {
		for _, p := range s.Params {
			for _, v := range p.Values {
				seen++
				if _, err := s.New(map[string]string{p.Name: v}); err != nil {
					t.Errorf("%s %s=%s is listed but refused: %v", s.Kind, p.Name, v, err)
				}
			}
			if len(p.Values) > 0 {
				if _, err := s.New(map[string]string{p.Name: "not-a-listed-value"}); err == nil {
					t.Errorf("%s %s=not-a-listed-value accepted: the list is not closed", s.Kind, p.Name)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no parameter lists its values")
	}
}

func TestDescribeEvaluatesTheRulesPerValue(t *testing.T) {
	var fo *KindDoc
	for _, d := range Describe() {
		if d.Kind == "failover" {
			fo = &d
		}
	}
	if fo == nil {
		t.Fatal("failover not described")
	}
	want := map[string]bool{"mode=kill": true, "mode=pause": true}
	if len(fo.Rules.SignalsProcessWhen) != len(want) {
		t.Fatalf("signals_process_when %v, want mode=kill and mode=pause", fo.Rules.SignalsProcessWhen)
	}
	for _, w := range fo.Rules.SignalsProcessWhen {
		if !want[w] {
			t.Fatalf("signals_process_when %v, want mode=kill and mode=pause", fo.Rules.SignalsProcessWhen)
		}
	}
}
