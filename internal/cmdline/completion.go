package cmdline

import (
	"strings"

	"github.com/spf13/cobra"

	"seckill-harness/faults"
	"seckill-harness/runner"
	"seckill-harness/runner/compare"
	"seckill-harness/runner/planner"
	"seckill-harness/scenarios"
)

// AddCompletion turns on cobra's `completion bash|zsh|fish|powershell`
// command and teaches it the harness's names: built-in scenarios as the
// argument of run, compare, capacity and validate (YAML files too), fault
// kinds for --fault, and the enum values of the flags that take one
// (--cluster, --mode, --shape, --progress, --path, --path-mix,
// --log-level). Registered on every command that has the flag.
func AddCompletion(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = false
	flagValues := map[string]cobra.CompletionFunc{
		"cluster":  clusterCompletion,
		"mode":     fixed(string(runner.ModeOpen), string(runner.ModeClosed)),
		"shape":    fixed(runner.Shapes...),
		"progress": fixed("auto", "tty", "plain", "off"),
		"path":     fixed(planner.Paths()...),
		"path-mix": fixed(compare.PathScenario, compare.PathAccept, compare.PathSoldOut, compare.PathBoth),
		"fault":    faultCompletion,
	}
	scenarioArg := map[string]bool{"run": true, "compare": true, "capacity": true, "validate": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, fn := range flagValues {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, fn)
			}
		}
		if scenarioArg[c.Name()] && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = scenarioCompletion(c.Name() == "validate")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// fixed offers a fixed list of values (no file names).
func fixed(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// scenarioCompletion offers the built-in scenario names (each with what it
// proves); the shell's own file completion stays on for a scenario file.
// many: the command takes several.
func scenarioCompletion(many bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, in := range scenarios.Builtins() {
			out = append(out, cobra.CompletionWithDesc(in.Name, in.Proves))
		}
		return out, cobra.ShellCompDirectiveDefault
	}
}

// clusterCompletion offers the --cluster forms: local, docker, and the
// URL schemes of an existing cluster (completed no further).
func clusterCompletion(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{
		cobra.CompletionWithDesc("local", "redis-server processes the harness starts and removes"),
		cobra.CompletionWithDesc("docker", "containers on a Docker engine"),
		cobra.CompletionWithDesc("redis://", "an existing cluster: redis://[user@]host:port[,host:port...]"),
		cobra.CompletionWithDesc("rediss://", "an existing cluster over TLS"),
	}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// faultCompletion offers "KIND:" for every fault kind; after the colon
// the kind's parameters as "KIND:name=", and after "name=" the values of
// an enum parameter (faults.Param.Values).
func faultCompletion(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	kind, params, hasColon := strings.Cut(toComplete, ":")
	var out []cobra.Completion
	if !hasColon {
		for _, k := range faults.Kinds() {
			out = append(out, cobra.CompletionWithDesc(k.Kind+":", k.Help))
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	spec, ok := faults.Lookup(kind)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	prefix := toComplete[:len(toComplete)-len(params)]
	last := params
	if i := strings.LastIndex(params, ","); i >= 0 {
		prefix, last = prefix+params[:i+1], params[i+1:]
	}
	if name, _, hasEq := strings.Cut(last, "="); hasEq {
		for _, p := range spec.Params {
			if p.Name != name {
				continue
			}
			for _, v := range p.Values {
				out = append(out, prefix+name+"="+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	names := []faults.Param{{Name: "at", Help: "offset from the start of the load"}, {Name: "for", Help: "how long it lasts; 0 = until the load ends"}}
	for _, p := range append(names, spec.Params...) {
		out = append(out, cobra.CompletionWithDesc(prefix+p.Name+"=", p.Help))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
