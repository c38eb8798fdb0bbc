package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill-harness/reports"
	"seckill-harness/runner"
	"seckill-harness/runner/lifecycle"
)

// recordAt is a measure that runs nothing: it records the plan each value
// produced and returns a passing row of it.
type recordAt struct{ plans []lifecycle.Plan }

func (m *recordAt) at(_ context.Context, _ io.Writer, q *lifecycle.Plan, v Value, out lifecycle.Output) (Row, error) {
	m.plans = append(m.plans, *q)
	return Row{Variant: v.Label, Buckets: q.Buckets, Settings: append([]string{}, v.Settings...), ReportDir: out.Dir,
		Run: &Run{Passed: true, report: &reports.Report{Passed: true}}}, nil
}

// One mechanism serves every axis: bucket counts, pool sizes, the local
// sold-out flag and the mitigations each go through the same loop (a copy
// of the plan per value, the value applied, named after it, its reports in
// its own directory) into the same row type and the same writer
// (compare.json rows, compare.md, report.html), each with its own columns.
func TestOneAxisMechanismServesEveryAxis(t *testing.T) {
	base := &lifecycle.Plan{Name: "s", Stock: 100, Buckets: 2, Phases: []runner.Phase{{Name: "load", Config: runner.DefaultConfig()}}}
	minRep, wait := *base, *base
	minRep.Cluster.ExtraConfig = []string{"min-replicas-to-write 1"}
	wait.Buckets = 3
	specs, err := ParseVariants("min-replicas,wait", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		axis   Axis
		column string
		want   func(i int, q lifecycle.Plan) bool
	}{
		{BucketAxis([]uint32{1, 4}), "SOLD_OUT while stock left", func(i int, q lifecycle.Plan) bool { return q.Buckets == []uint32{1, 4}[i] }},
		{PoolSizeAxis([]int{4, 64}), "pool waits", func(i int, q lifecycle.Plan) bool { return q.Cluster.PoolSize == []int{4, 64}[i] && q.Buckets == 2 }},
		{LocalSoldOutAxis(time.Second), "answered locally", func(i int, q lifecycle.Plan) bool { return q.LocalSoldOut.TTL == []time.Duration{0, time.Second}[i] }},
		{VariantAxis(specs, []*lifecycle.Plan{&minRep, &wait}), "lost WAIT-confirmed", func(i int, q lifecycle.Plan) bool {
			return (i == 0 && len(q.Cluster.ExtraConfig) == 1 && q.Buckets == 2) || (i == 1 && q.Buckets == 3 && q.Cluster.ExtraConfig == nil)
		}},
	} {
		t.Run(tc.axis.Name, func(t *testing.T) {
			dir := t.TempDir()
			rec := &recordAt{}
			var log bytes.Buffer
			passed, err := compareBy(context.Background(), &log, base, tc.axis, rec, lifecycle.Output{Dir: dir})
			if err != nil || !passed {
				t.Fatalf("passed %v, err %v", passed, err)
			}
			if len(rec.plans) != len(tc.axis.Values) {
				t.Fatalf("%d plans for %d values", len(rec.plans), len(tc.axis.Values))
			}
			for i, q := range rec.plans {
				v := tc.axis.Values[i]
				if !tc.want(i, q) || q.Name != fmt.Sprintf("s (%s)", v.Label) {
					t.Errorf("value %s: plan %q with buckets %d, pool %d, flag %s, config %v", v.Label, q.Name, q.Buckets, q.Cluster.PoolSize, q.LocalSoldOut.TTL, q.Cluster.ExtraConfig)
				}
			}
			if base.Buckets != 2 || base.Cluster.PoolSize != 0 || base.Name != "s" {
				t.Fatalf("the axis changed the plan itself: %+v", base)
			}
			if !strings.Contains(log.String(), tc.column) {
				t.Errorf("the %s table lacks its column %q:\n%s", tc.axis.Name, tc.column, log.String())
			}
			raw, err := os.ReadFile(filepath.Join(dir, "compare.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Dimension string
				Rows      []Row
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Dimension != tc.axis.Name || len(doc.Rows) != len(tc.axis.Values) {
				t.Fatalf("compare.json: dimension %q, %d rows", doc.Dimension, len(doc.Rows))
			}
			for i, r := range doc.Rows {
				if v := tc.axis.Values[i]; r.Variant != v.Label || r.ReportDir != filepath.Join(dir, v.Dir) || r.Run == nil || !r.Passed {
					t.Errorf("row %d: %+v, want value %s in %s", i, r, v.Label, v.Dir)
				}
			}
			if b, err := os.ReadFile(filepath.Join(dir, "compare.md")); err != nil || !bytes.Contains(b, []byte("| "+tc.column+" |")) {
				t.Errorf("compare.md: %v, or it lacks the column %q:\n%s", err, tc.column, b)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !bytes.Contains(b, []byte(tc.axis.Values[1].Label)) {
				t.Errorf("report.html: %v, or it does not name %q", err, tc.axis.Values[1].Label)
			}
		})
	}
}
