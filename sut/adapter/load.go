package adapter

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"seckill-harness/internal/boundedread"
	"seckill-harness/internal/fileref"
)

// Limits on what Load reads: an adapter file and a script are small.
const (
	MaxFileBytes   = 1 << 20
	MaxScriptBytes = 1 << 20
)

// Op is one of the scripted operations a file may declare.
type Op string

// The operations.
const (
	OpReserve Op = "reserve"
	OpRelease Op = "release"
)

// compiled is the file's templates and reply mappings, parsed and checked.
type compiled struct {
	hashTag  Template
	calls    map[Op]*callPlan
	setup    [][]Template // commands, or [keys, args] of the setup script
	teardown []Template
	reads    map[string][]Template // state reads by field name
	expiring []Template
	// userScript is a script path given on the command line (Init's draft
	// names the user's own script): it is not bound to the file's
	// directory. "": every script is (fileref.Resolve).
	userScript string
}

type callPlan struct {
	keys, args []Template
	built      []Template // built_keys
	reply      replyMap
	script     *Script
}

// Load reads and checks the adapter file at path and the scripts it
// names. Every error names path:line, the problem and the fix.
func Load(path string) (*File, error) { return load(path, "") }

// load is Load where the script path userScript, the user's own choice,
// is read wherever it is.
func load(path, userScript string) (*File, error) {
	const fix = "give the path of an adapter YAML file (docs/ADAPTERS.md)"
	data, err := boundedread.File(path, MaxFileBytes, "adapter file", fix)
	if err != nil {
		if !strings.Contains(err.Error(), fix) {
			err = fmt.Errorf("%w: %s", err, fix)
		}
		return nil, err
	}
	f := &File{Path: path, Dir: filepath.Dir(path), scripts: map[string]*Script{}}
	f.tmpl.userScript = userScript
	if err := decodeFile(path, data, f); err != nil {
		return nil, err
	}
	if f.Name == "" {
		f.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if err := f.compile(); err != nil {
		return nil, err
	}
	if err := f.refuseCommands(); err != nil {
		return nil, err
	}
	return f, nil
}

// PreflightStrict is File.Preflight's one value: every pre-flight
// finding refuses the load.
const PreflightStrict = "strict"

// Strict reports whether every pre-flight finding refuses the load
// (preflight: strict, or SetStrict).
func (f *File) Strict() bool { return f.Preflight == PreflightStrict }

// SetStrict makes every pre-flight finding refuse the load, whatever the
// file says (run --strict-preflight).
func (f *File) SetStrict() { f.Preflight = PreflightStrict }

// line is the line of the value at field path p (0 when unknown).
func (f *File) line(p string) int { return f.lines[p] }

// errAt is an error at field path p: file:line: p: problem (every quoted
// value cut to fileref.MaxToken bytes).
func (f *File) errAt(p, format string, args ...any) error {
	return errors.New(fileref.Clip(fmt.Sprintf("%s:%d: %s: %s", f.Path, f.line(p), p, fmt.Sprintf(format, args...))))
}

func (f *File) compile() error {
	f.tmpl.calls = map[Op]*callPlan{}
	if f.Preflight != "" && f.Preflight != PreflightStrict {
		return f.errAt("preflight", "unknown value %q: write preflight: %s (every pre-flight finding refuses the load), or remove it (the load is refused only for what Redis refused on a sample call)", f.Preflight, PreflightStrict)
	}
	if f.HashTag != "" {
		t, err := f.template("hash_tag", f.HashTag, ctxHashTag, false)
		if err != nil {
			return err
		}
		f.tmpl.hashTag = t
	}
	if err := f.compileCall(OpReserve, f.Reserve, ctxReserve, reserveOutcomes(), []Outcome{Accepted, SoldOut}); err != nil {
		return err
	}
	if f.Release != nil {
		if err := f.compileCall(OpRelease, f.Release, ctxRelease, releaseOutcomes(), []Outcome{Released}); err != nil {
			return err
		}
	}
	if err := f.compileSetup(); err != nil {
		return err
	}
	if f.Teardown != nil {
		if len(f.Teardown.Keys) == 0 {
			return f.errAt("teardown.keys", "no key listed: list the keys the setup and the script create, or remove teardown:")
		}
		ts, err := f.templates("teardown.keys", f.Teardown.Keys, ctxKeyspace)
		if err != nil {
			return err
		}
		f.tmpl.teardown = ts
	}
	if err := f.compileState(); err != nil {
		return err
	}
	for _, op := range []Op{OpReserve, OpRelease} {
		if c := f.tmpl.calls[op]; c != nil {
			f.tmpl.teardown = withTemplates(f.tmpl.teardown, c.built)
			f.tmpl.expiring = withTemplates(f.tmpl.expiring, c.built)
		}
	}
	return nil
}

// withTemplates appends to list the templates of more it does not hold
// (by text).
func withTemplates(list, more []Template) []Template {
	for _, t := range more {
		dup := false
		for _, x := range list {
			dup = dup || x.Text == t.Text
		}
		if !dup {
			list = append(list, t)
		}
	}
	return list
}

// template parses text at field path p and checks its references against
// context ctx.
func (f *File) template(p, text string, ctx scope, tagOK bool) (Template, error) {
	t, err := parseTemplate(text)
	if err != nil {
		return t, f.errAt(p, "%v", err)
	}
	for _, n := range t.Refs() {
		if n == tagName {
			if !tagOK {
				return t, f.errAt(p, "${tag} is not allowed in the hash tag itself: write the values it is made of")
			}
			if f.HashTag == "" {
				return t, f.errAt(p, "${tag} names the hash tag, but the file has no hash_tag: add hash_tag: (e.g. \"${activity}:${bucket}\") or write the braces out")
			}
			if s := f.tmpl.hashTag.scopeOf(Template{}); s&^ctx != 0 {
				return t, f.errAt(p, "${tag} uses values (hash_tag %q) not known here: the values here are %s", f.HashTag, strings.Join(namesIn(ctx, false), ", "))
			}
			continue
		}
		d, ok := valueNames[n]
		if !ok || d.scope&ctx == 0 {
			what := "unknown value"
			if ok {
				what = "value not known here"
			}
			return t, f.errAt(p, "bad template reference ${%s} (%s): the values here are %s", n, what, strings.Join(namesIn(ctx, true), ", "))
		}
	}
	return t, nil
}

func (f *File) templates(p string, texts []string, ctx scope) ([]Template, error) {
	out := make([]Template, len(texts))
	for i, s := range texts {
		t, err := f.template(fmt.Sprintf("%s[%d]", p, i+1), s, ctx, true)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// loadScript reads the script at field path p, relative to the file's
// directory and inside it (or inside --files-root: fileref.Resolve).
func (f *File) loadScript(p, rel string) (*Script, error) {
	if rel == "" {
		return nil, f.errAt(p, "empty script path: give the Lua file, relative to %s", f.Path)
	}
	full := rel
	if rel != f.tmpl.userScript || rel == "" {
		var err error
		if full, err = fileref.Resolve(f.Path, rel); err != nil {
			return nil, f.errAt(p, "%v", err)
		}
	}
	fix := "give the Lua file's path relative to the adapter file's directory " + f.Dir
	src, err := boundedread.File(full, MaxScriptBytes, "script", fix)
	if err != nil {
		if !strings.Contains(err.Error(), fix) {
			return nil, f.errAt(p, "%v: %s", err, fix)
		}
		return nil, f.errAt(p, "%v", err)
	}
	if err := checkText(full, src); err != nil {
		return nil, f.errAt(p, "%v", err)
	}
	sum := sha1.Sum(src)
	s := &Script{Path: full, Source: string(src), SHA1: hex.EncodeToString(sum[:])}
	f.scripts[p] = s
	return s, nil
}

func (f *File) compileCall(op Op, c *Call, ctx scope, allowed, need []Outcome) error {
	p := string(op)
	s, err := f.loadScript(p+".script", c.Script)
	if err != nil {
		return err
	}
	plan := &callPlan{script: s}
	if plan.keys, err = f.templates(p+".keys", c.Keys, ctx); err != nil {
		return err
	}
	if plan.args, err = f.templates(p+".args", c.Args, ctx); err != nil {
		return err
	}
	if plan.built, err = f.templates(p+".built_keys", c.BuiltKeys, ctxKeyspace); err != nil {
		return err
	}
	if plan.reply, err = f.compileReply(c.Reply, p+".reply", allowed, need); err != nil {
		return err
	}
	f.tmpl.calls[op] = plan
	return nil
}

func (f *File) compileSetup() error {
	s := f.Setup
	if s == nil {
		return nil
	}
	switch {
	case len(s.Commands) > 0 && s.Script != "":
		return f.errAt("setup.script", "setup has both commands: and script:: keep one")
	case len(s.Commands) == 0 && s.Script == "":
		return f.errAt("setup", "setup has neither commands: nor script:: give the commands that create a bucket with its ${stock}, or a script")
	case len(s.Commands) > 0 && (len(s.Keys) > 0 || len(s.Args) > 0):
		return f.errAt("setup.keys", "keys: and args: belong to a setup script, not to commands: remove them or use script:")
	}
	if s.Script != "" {
		if _, err := f.loadScript("setup.script", s.Script); err != nil {
			return err
		}
		keys, err := f.templates("setup.keys", s.Keys, ctxSetup)
		if err != nil {
			return err
		}
		args, err := f.templates("setup.args", s.Args, ctxSetup)
		if err != nil {
			return err
		}
		f.tmpl.setup = [][]Template{keys, args}
		return nil
	}
	for i, cmd := range s.Commands {
		p := fmt.Sprintf("setup.commands[%d]", i+1)
		if len(cmd) == 0 {
			return f.errAt(p, "empty command: write the command name and its arguments, e.g. [HSET, \"stock:${tag}\", available, \"${stock}\"]")
		}
		ts, err := f.templates(p, cmd, ctxSetup)
		if err != nil {
			return err
		}
		f.tmpl.setup = append(f.tmpl.setup, ts)
	}
	return nil
}

// stateReads are State's read fields with the context of each.
var stateReads = []struct {
	name string
	ctx  scope
	get  func(*State) []string
}{
	{"available", ctxBucket, func(s *State) []string { return s.Available }},
	{"held", ctxBucket, func(s *State) []string { return s.Held }},
	{"user_hold", ctxUser, func(s *State) []string { return s.UserHold }},
	{"record", ctxKeyspace, func(s *State) []string { return s.Record }},
}

func (f *File) compileState() error {
	f.tmpl.reads = map[string][]Template{}
	if f.State == nil {
		return nil
	}
	for _, r := range stateReads {
		cmd := r.get(f.State)
		if cmd == nil {
			continue
		}
		p := "state." + r.name
		if len(cmd) == 0 {
			return f.errAt(p, "empty command: write the read, e.g. [HGET, \"stock:${tag}\", available], or remove %s:", r.name)
		}
		ts, err := f.templates(p, cmd, r.ctx)
		if err != nil {
			return err
		}
		f.tmpl.reads[r.name] = ts
	}
	ts, err := f.templates("state.expiring_keys", f.State.ExpiringKeys, ctxKeyspace)
	f.tmpl.expiring = ts
	return err
}
