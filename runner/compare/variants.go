package compare

import (
	"fmt"
	"regexp"
	"strings"
)

// VariantSpec is one variant of a compare by variants: a name and the
// scenario settings (key=value, as --set takes them) that make it, applied
// over the scenario and the command's own --set values.
type VariantSpec struct {
	Name string
	Sets []string
}

// Mitigations are the named variants of `compare --mitigations`: the
// defences against losing acknowledged reservations to asynchronous
// replication, each as scenario settings.
//
//   - none: the scenario as written.
//   - min-replicas: a master refuses writes (NOREPLICAS) unless a replica
//     acknowledged the stream within the last second
//     (min-replicas-to-write 1, min-replicas-max-lag 1).
//   - wait: WAIT 1 after each fresh ACCEPTED, on the connection that ran
//     the script (runner.DefaultWaitTimeout); the answer is not refused,
//     but it says whether the replica confirmed it.
var Mitigations = []VariantSpec{
	{Name: "none"},
	{Name: "min-replicas", Sets: []string{"topology.min_replicas_to_write=1", "topology.min_replicas_max_lag=1s"}},
	{Name: "wait", Sets: []string{"wait.replicas=1"}},
}

// DefaultMitigations is what --mitigations names when given empty.
const DefaultMitigations = "none,min-replicas,wait"

var variantName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// ParseVariants reads `--mitigations a,b` (names of Mitigations, in the
// order given) and `--variant NAME:key=value` (repeatable; the settings of
// one NAME accumulate, `NAME:` alone is the scenario as written) into the
// variants to compare: the mitigations first, then the named variants in
// the order they first appear. Errors name the flag and the fix.
func ParseVariants(mitigations string, variants []string) ([]VariantSpec, error) {
	var out []VariantSpec
	index := map[string]int{}
	add := func(name string) (*VariantSpec, error) {
		if i, ok := index[name]; ok {
			return &out[i], nil
		}
		if !variantName.MatchString(name) {
			return nil, fmt.Errorf("variant name %q: want 1-40 letters, digits, '-' or '_' (it names the variant's report directory)", name)
		}
		index[name] = len(out)
		out = append(out, VariantSpec{Name: name})
		return &out[len(out)-1], nil
	}
	if strings.TrimSpace(mitigations) != "" {
		for _, m := range strings.Split(mitigations, ",") {
			m = strings.TrimSpace(m)
			var found *VariantSpec
			for i := range Mitigations {
				if Mitigations[i].Name == m {
					found = &Mitigations[i]
				}
			}
			if found == nil {
				return nil, fmt.Errorf("--mitigations %q: unknown mitigation %q; known: %s (or describe your own with --variant NAME:key=value)", mitigations, m, mitigationNames())
			}
			if _, dup := index[m]; dup {
				return nil, fmt.Errorf("--mitigations %q: %s named twice", mitigations, m)
			}
			v, _ := add(m)
			v.Sets = append([]string(nil), found.Sets...)
		}
	}
	for _, raw := range variants {
		name, set, ok := strings.Cut(raw, ":")
		name, set = strings.TrimSpace(name), strings.TrimSpace(set)
		if !ok || name == "" {
			return nil, fmt.Errorf("--variant %q: want NAME:key=value (e.g. --variant wait-1s:wait.replicas=1 --variant wait-1s:wait.timeout=1s), or NAME: for the scenario as written", raw)
		}
		v, err := add(name)
		if err != nil {
			return nil, fmt.Errorf("--variant %q: %w", raw, err)
		}
		if set != "" {
			if !strings.Contains(set, "=") {
				return nil, fmt.Errorf("--variant %q: the setting %q is not key=value (as --set takes it, e.g. topology.min_replicas_to_write=1)", raw, set)
			}
			v.Sets = append(v.Sets, set)
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("a compare by variants needs at least two: --mitigations %s, or --variant NAME:key=value for each", DefaultMitigations)
	}
	return out, nil
}

func mitigationNames() string {
	names := make([]string, len(Mitigations))
	for i, m := range Mitigations {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}
