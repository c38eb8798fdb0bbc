package adapter

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"seckill-harness/internal/boundedread"
	"seckill-harness/internal/fileref"
)

// Init writes a commented starting adapter file for the reserve script at
// scriptPath: its KEYS and ARGV (as many as the highest KEYS[n] and
// ARGV[n] the text names, each with a guessed template and why), a setup
// for the key that looks like the stock, the state reads those keys
// allow, and a reply mapping guessed from dry calls of the script on a
// throwaway local cluster Init starts and stops itself (one redis-server
// on 127.0.0.1, ended by its PID): with a stock of 2, user u1 twice (the
// second time with a new request id), its first request re-sent, then
// users u2 and u3. Every guess is marked GUESS or UNKNOWN in a comment
// for the team to confirm; the replies are listed as comments.
//
// The file always loads (Load): what cannot be guessed gets a placeholder
// that the comments name. The script path in the file is relative to
// out's directory (to the working directory when out is ""). When out is
// not "", Init writes the file there and refuses to overwrite one. It
// returns the text.
func Init(ctx context.Context, scriptPath, out string) (string, error) {
	const fix = "give the path of your reserve script (a Lua file)"
	src, err := boundedread.File(scriptPath, MaxScriptBytes, "script", fix)
	if err != nil {
		if !strings.Contains(err.Error(), fix) {
			err = fmt.Errorf("adapter init: %w: %s", err, fix)
		}
		return "", err
	}
	if err := checkText(scriptPath, src); err != nil {
		return "", fmt.Errorf("adapter init: %w", err)
	}
	if err := refuseScript(&Script{Path: scriptPath, Source: string(src)}); err != nil {
		return "", fmt.Errorf("adapter init: %w", err)
	}
	if out != "" {
		if _, err := os.Stat(out); err == nil {
			return "", fmt.Errorf("adapter init: %s exists: remove it or give another --out", out)
		}
	}
	abs, err := filepath.Abs(scriptPath)
	if err != nil {
		return "", err
	}
	d := newDraft(abs, string(src))
	if err := d.dryRun(ctx); err != nil {
		return "", err
	}
	d.guessReply()
	f, err := d.load()
	if err != nil {
		return "", fmt.Errorf("adapter init wrote a file that does not load (a harness bug, please report it): %w", err)
	}
	for _, x := range f.StaticFindings() {
		d.findings = append(d.findings, fmt.Sprintf("%s (%s): %s", x.Problem(), x.Kind, x.Detail))
	}
	base := "."
	if out != "" {
		base = filepath.Dir(out)
	}
	rel := abs
	if b, err := filepath.Abs(base); err == nil {
		if r, err := filepath.Rel(b, abs); err == nil {
			rel = r
		}
	}
	text := d.text(filepath.ToSlash(rel))
	if out != "" {
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			return "", fmt.Errorf("adapter init: writing %s: %w", out, err)
		}
	}
	return text, nil
}

// draft is the file Init is writing.
type draft struct {
	name, script string
	scan         *scan
	keys, keyWhy []string
	args, argWhy []string
	stock        int    // 1-based KEYS index of the stock; 0: none seen
	stockField   string // "" for a string counter
	dry          []dryCall
	reply        replyGuess
	findings     []string // the static findings on the draft
}

func newDraft(script, src string) *draft {
	name := strings.TrimSuffix(filepath.Base(script), filepath.Ext(script))
	d := &draft{name: name, script: script, scan: scanSource(src)}
	seen := map[string]int{}
	for n := 1; n <= d.scan.nKeys; n++ {
		suffix, stock, why := d.scan.keyRole(n, d.stock != 0)
		if seen[suffix]++; seen[suffix] > 1 {
			suffix = fmt.Sprintf("%s%d", suffix, n)
		}
		if stock {
			d.stock, d.stockField = n, d.scan.hashField(n)
		}
		d.keys = append(d.keys, "${tag}:"+suffix)
		d.keyWhy = append(d.keyWhy, why)
	}
	for n := 1; n <= d.scan.nArgs; n++ {
		t, why := d.scan.argRole(n)
		d.args, d.argWhy = append(d.args, t), append(d.argWhy, why)
	}
	return d
}

// hashField is the field a hash stock is read from ("" for a string).
func (s *scan) hashField(n int) string {
	if !hasAny(s.keyCmds[n], "HGET", "HINCRBY", "HMGET", "HSET") {
		return ""
	}
	if len(s.keyFields[n]) > 0 {
		return s.keyFields[n][0]
	}
	return "available"
}

// keyOf finds the first key whose template has suffix.
func (d *draft) keyOf(suffix string) string {
	for _, k := range d.keys {
		if strings.HasSuffix(k, ":"+suffix) {
			return k
		}
	}
	return ""
}

// withTempFile writes text to a temporary adapter file and calls fn with
// its path.
func withTempFile(text string, fn func(path string) error) error {
	dir, err := os.MkdirTemp("", "seckill-adapter-init-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "adapter.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		return err
	}
	return fn(p)
}

// WriteInit is `adapter init SCRIPT [--out FILE]`: Init, then to w either
// the file's text (no out) or where it was written and what to do next.
func WriteInit(ctx context.Context, w io.Writer, scriptPath, out string) error {
	text, err := Init(ctx, scriptPath, out)
	if err == nil && out != "" {
		text = fmt.Sprintf("wrote %s: confirm each GUESS and UNKNOWN in it, then: seckill-harness adapter validate %[1]s%s\n", out, rootFlag(scriptPath, out))
	}
	fmt.Fprint(w, text)
	return err
}

// rootFlag is the --files-root the file at out needs to reach the script
// (" --files-root DIR", the nearest directory holding both), or "" when
// the script is under out's directory, where a path written in the file
// may go without it.
func rootFlag(script, out string) string {
	abs, err1 := filepath.Abs(script)
	dir, err2 := filepath.Abs(filepath.Dir(out))
	if err1 != nil || err2 != nil || fileref.Within(dir, abs) {
		return ""
	}
	for !fileref.Within(dir, abs) && filepath.Dir(dir) != dir {
		dir = filepath.Dir(dir)
	}
	return " " + fileref.Flag + " " + dir
}
