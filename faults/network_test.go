package faults

import (
	"context"
	"strings"
	"testing"
	"time"
)

var networkKinds = []string{kindDisconnect, kindLatency, kindBandwidth, kindSlicer, kindPartition}

func TestNetworkKindsRegistered(t *testing.T) {
	for _, k := range networkKinds {
		s, ok := Lookup(k)
		if !ok {
			t.Fatalf("kind %s not registered", k)
		}
		if s.Help == "" || len(s.Params) == 0 || s.Params[0].Name != "target" {
			t.Errorf("kind %s: help %q, params %+v: want help and target documented first", k, s.Help, s.Params)
		}
	}
}

func TestParseNetworkFaults(t *testing.T) {
	p, err := Parse("latency:latency=50,at=1s,for=2s")
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != kindLatency || p.At != time.Second || p.For != 2*time.Second || p.Fault.Kind() != kindLatency {
		t.Fatalf("parsed %+v", p)
	}
	ev := p.Fault.Evidence()
	if ev["latency_ms"] != int64(50) || ev["jitter_ms"] != int64(0) || ev["stream"] != "downstream" || ev["target"] != TargetHotMaster {
		t.Fatalf("evidence of the parsed fault: %v", ev)
	}
	good := []string{
		"latency",
		"latency:latency=5,jitter=2,stream=upstream,toxicity=0.5,target=all-masters",
		"bandwidth:rate=10",
		"slicer:average_size=8,size_variation=4,delay=10",
		"disconnect-before-reply",
		"disconnect-before-reply:toxic=limit_data,target=hot-master",
		"disconnect-before-reply:toxic=timeout,every=500ms,pulse=20ms",
		"partition:target=node=127.0.0.1:7000",
		"partition:target=hot-replica",
		"latency:target=slot=42",
	}
	for _, s := range good {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	bad := map[string]string{ // spec → text the error must contain
		"latency:latncy=5":                                "latncy",
		"latency:latency=abc":                             "latency=",
		"latency:latency=-1":                              "latency=",
		"latency:jitter=x":                                "jitter=",
		"latency:stream=sideways":                         "stream=",
		"latency:toxicity=0":                              "toxicity=",
		"latency:toxicity=1.5":                            "toxicity=",
		"latency:target=somewhere":                        "target=",
		"bandwidth:rate=0":                                "rate=",
		"slicer:average_size=4,size_variation=4":          "size_variation=",
		"slicer:delay=soon":                               "delay=",
		"disconnect-before-reply:toxic=slow_close":        "toxic=",
		"disconnect-before-reply:every=100ms,pulse=200ms": "pulse=",
		"disconnect-before-reply:every=often":             "every=",
		"partition:latency=5":                             "latency",
		"partition:target=node=nothost":                   "target=",
		"latency:target=slot=16384":                       "target=",
	}
	for s, want := range bad {
		_, err := Parse(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v: want an error naming %q", s, err, want)
		}
	}
}

func TestNetworkKindsRefuseWithoutProxies(t *testing.T) {
	for _, k := range networkKinds {
		p, err := Plan(k, map[string]string{}, k)
		if err != nil {
			t.Fatal(err)
		}
		env := &Env{HotSlots: []int{0}}
		err = p.Fault.Inject(context.Background(), env)
		want := "fault " + k + " needs the proxies: run on the local cluster with proxies"
		if err == nil || err.Error() != want {
			t.Errorf("%s without proxies: %v, want %q", k, err, want)
		}
		if err := p.Fault.Heal(context.Background(), env); err != nil {
			t.Errorf("%s: Heal after a refused Inject: %v", k, err)
		}
		if err := p.Fault.Heal(context.Background(), env); err != nil {
			t.Errorf("%s: second Heal: %v", k, err)
		}
		if p.Fault.Evidence() == nil {
			t.Errorf("%s: nil evidence", k)
		}
	}
}

func TestNewDoesNotConsumeCallerParams(t *testing.T) {
	spec, _ := Lookup(kindLatency)
	params := map[string]string{"target": "all-masters", "latency": "5"}
	if _, err := spec.New(params); err != nil {
		t.Fatal(err)
	}
	if params["target"] != "all-masters" {
		t.Fatalf("New consumed the caller's params: %v", params)
	}
}
