package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestWriteTextFail(t *testing.T) {
	r := sampleReport()
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Logf("\n%s", out)

	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "FAIL (2 checks failed: I3, I6)" {
		t.Errorf("last line %q, want the verdict", last)
	}
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line %d has %d columns (> 100): %q", i+1, n, l)
		}
	}
	for _, want := range []string{
		"stock-one", "seed 42", "3 masters, 1 replica each (local)", "open constant",
		"target 2000 ops/s", "stock 1000 in 2 buckets",
		"ops 20000", "1999.1 ops/s", "wire attempts 20011", "late starts 3 (> 10 ms)", "dropped 0",
		"timeout", "baseline", "failover", "127.0.0.1:7004", "recovery_ms=1830",
		"lost acks 2", "executed 7, not executed 3",
		"p99 < 20ms in baseline", "history.jsonl",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// Outcomes sorted by count with percentages; ERROR shown though absent.
	iSold, iAcc, iErr := strings.Index(out, "SOLD_OUT"), strings.Index(out, "ACCEPTED"), strings.Index(out, "\nERROR ")
	if iSold < 0 || iAcc < 0 || iErr < 0 || !(iSold < iAcc && iAcc < iErr) {
		t.Errorf("outcomes not sorted by count (SOLD_OUT %d, ACCEPTED %d, ERROR %d)", iSold, iAcc, iErr)
	}
	if !strings.Contains(out, "94.95%") || !strings.Contains(out, "5.00%") {
		t.Error("outcome percentages missing")
	}

	// Invariant table: each id on a row with its upper-case status.
	for id, status := range map[string]string{"I1": "PASS", "I3": "FAIL", "I6": "FAIL", "I9": "SKIP"} {
		row := lineWith(lines, id+" ")
		if row == "" || !strings.Contains(row, status) {
			t.Errorf("invariant %s row %q lacks %s", id, row, status)
		}
	}
	// The long I3 detail is wrapped, not lost.
	if !strings.Contains(out, "oversold by 2") || !strings.Contains(out, "failover at 3.0 s") {
		t.Error("I3 detail was cut")
	}
	// Latency vs service rows with the p99.9 values.
	if row := lineWith(lines, "latency (from intended send)"); !strings.Contains(row, "4.200") || !strings.Contains(row, "9.100") {
		t.Errorf("latency row %q", row)
	}
	if row := lineWith(lines, "service time (from actual send)"); !strings.Contains(row, "4.000") {
		t.Errorf("service row %q", row)
	}
	if row := lineWith(lines, "bucket 1"); !strings.Contains(row, "500") {
		t.Errorf("stock row %q", row)
	}
	if !strings.Contains(out, "worst second: t=4s") {
		t.Error("worst second missing")
	}
}

func lineWith(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestWriteTextPassAndMinimal(t *testing.T) {
	r := &Report{Scenario: "smoke", Passed: true, StartedAt: time.Now(),
		Invariants: []Invariant{{ID: "I1", Name: "stock_conservation", Status: StatusPass, Detail: "tab\there\nnewline"}}}
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasSuffix(out, "\nPASS\n") {
		t.Errorf("verdict must be PASS:\n%s", out)
	}
	if !strings.Contains(out, "tab here newline") {
		t.Errorf("control characters must become spaces:\n%s", out)
	}
	if strings.Contains(out, "PHASE") || strings.Contains(out, "FAULT") || strings.Contains(out, "ASSERTION") {
		t.Errorf("empty sections must be omitted:\n%s", out)
	}

	// A nil-free zero report still renders, and says FAIL (passed=false).
	buf.Reset()
	if err := WriteText(&buf, &Report{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nFAIL (passed=false") {
		t.Errorf("zero report verdict:\n%s", buf.String())
	}
	if err := WriteText(failWriter{}, r); err == nil {
		t.Error("write error not returned")
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aaa bbb ccc dddddddddd e", 7)
	want := []string{"aaa bbb", "ccc", "ddddddd", "ddd e"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q, want %q", got, want)
	}
	if got := wrap("", 5); len(got) != 1 || got[0] != "" {
		t.Errorf("wrap of empty = %q", got)
	}
	if got := truncate("abcdefgh", 5); got != "abcd…" {
		t.Errorf("truncate = %q", got)
	}
}

// The summaries name the hottest node (the killed master's replica, which
// took over and ran hotter), its peak CPU and the others', and the scripts'
// server-side cost.
func TestSummariesNameTheHottestNode(t *testing.T) {
	rep, _ := syntheticFailoverRun()
	withServers(rep)
	var txt, md strings.Builder
	if err := WriteText(&txt, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	want := "hottest node 127.0.0.1:7004 (replica→master): peak CPU 90%"
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		if !strings.Contains(out, want) || !strings.Contains(out, "others peak 127.0.0.1:7001 80%") {
			t.Errorf("%s summary does not name the hottest node (%q):\n%s", name, want, out)
		}
		if !strings.Contains(out, "evalsha") || !strings.Contains(out, "15.00 µs") {
			t.Errorf("%s summary lacks the scripts' cost:\n%s", name, out)
		}
	}
	if !strings.Contains(txt.String(), "127.0.0.1:7001  master") || !strings.Contains(txt.String(), "          4\n") {
		t.Errorf("text: the killed master's 4 unanswered samples are not shown:\n%s", txt.String())
	}
}

// The keyspace figures a capacity plan needs are in the summary, taken
// from the report.
func TestWriteTextKeySpace(t *testing.T) {
	r := &Report{Passed: true, KeySpace: &KeySpace{KeysChecked: 15124, KeysWithoutTTL: 3, MemoryPerReservationBytes: 672, RequestResultBytes: 67.8,
		RequestShards: 512, RequestShardSkew: 2.18, LargestRequestShard: &RequestShardSize{HLen: 32, MemoryBytes: 2168}}}
	var buf bytes.Buffer
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"keys 15124 checked: 3 without TTL", "memory 672 B per reservation", "67.8 B per request result",
		"largest request shard 32 entries, 2168 B (skew 2.18 over 512 shards)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %q in:\n%s", want, buf.String())
		}
	}
}
