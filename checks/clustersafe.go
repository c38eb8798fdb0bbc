package checks

import (
	"fmt"
	"strings"
)

// judgeA1 judges the pre-flight's findings (Facts.Preflight): each is a
// place in the system's scripts (file:line) with the keys at fault, in a
// team's words ("not cluster-safe: …"). A1 fails on any finding; the
// detail says whether the load was refused (a finding Refuses) or ran
// (Redis ran every sample call: the other checks judge what it did).
func judgeA1(f *Facts) Verdict {
	pf := f.Preflight
	if pf == nil {
		return Verdict{Detail: "no pre-flight ran"}
	}
	if len(pf.Findings) == 0 {
		return Verdict{Detail: fmt.Sprintf("the pre-flight's sample calls of %s touched only keys they pass in KEYS, each call's KEYS in one slot", pf.System),
			Evidence: map[string]any{"findings": 0}}
	}
	var lines []string
	var list []map[string]any
	for _, x := range pf.Findings {
		lines = append(lines, x.String())
		list = append(list, map[string]any{"problem": x.Problem, "kind": x.Kind, "where": x.Where, "keys": x.Keys, "detail": x.Detail, "refuses": x.Refuses})
	}
	head := "refused before the load"
	if !pf.Refused() {
		head = "the load ran (Redis ran every sample call; the other checks judge what the shape costs)"
	}
	return Verdict{Failed: true,
		Detail:   fmt.Sprintf("%s: %d finding(s) in %s: %s", head, len(lines), pf.System, strings.Join(lines, "; ")),
		Evidence: map[string]any{"findings": len(list), "found": list, "refused": pf.Refused()}}
}

// appliesA1: only a system with a pre-flight (an adapter file) is judged.
func appliesA1(f *Facts, _ Verdict) string {
	if f.Preflight == nil {
		return "the system under test is not an adapter file: its scripts are the harness's own, and no pre-flight ran"
	}
	return ""
}
