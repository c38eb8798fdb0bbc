package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A fresh machine must get what it needs from the target that needs it:
// the Makefile lists every Debian package in its PKGS_* variables and
// testdata/install-packages.sh installs the missing ones. A script that
// prints "apt-get install X" and exits leaves a fresh machine failing
// every test that needs X (it did: build-images.sh and busybox-static).

// adviceRE matches text telling a person to install something.
var adviceRE = regexp.MustCompile(`(?i)\bapt(-get)?\s+install\b|\binstall\s+(it|them)\b|\b(please|you must|you need to)\s+install\b|\b(yum|dnf|brew|pip)\s+install\b|\bapk\s+add\b`)

// quotedAssign starts a variable assignment of a quoted string.
var quotedAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=["']`)

// messageWords start a command whose arguments are shown to a person.
var messageWords = map[string]bool{"echo": true, "printf": true, "die": true, "fail": true, "warn": true, "error": true}

// installAdvice reports the text of a shell or Makefile line (continuations
// joined) that tells a person to install something instead of installing
// it: the arguments of echo/printf-like commands, a Make $(error),
// $(warning) or $(info), and a quoted string assigned to a variable. An
// executed command (apt-get install -y …) and comments are not advice.
func installAdvice(line string) (string, bool) {
	line = strings.TrimLeft(line, " \t@-")
	if strings.HasPrefix(line, "#") {
		return "", false
	}
	for _, fn := range []string{"$(error", "$(warning", "$(info"} {
		if i := strings.Index(line, fn); i >= 0 && adviceRE.MatchString(line[i:]) {
			return line[i:], true
		}
	}
	for _, cmd := range splitCommands(line) {
		words := strings.Fields(cmd)
		for len(words) > 0 && (words[0] == "{" || words[0] == "then" || words[0] == "else" || words[0] == "do" || words[0] == "!" || words[0] == "(") {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		text := strings.Join(words, " ")
		switch {
		case messageWords[words[0]]:
		case quotedAssign.MatchString(words[0]) && assignsOnly(words):
			text = text[strings.Index(text, "="):]
		default:
			continue
		}
		if adviceRE.MatchString(text) {
			return text, true
		}
	}
	return "", false
}

// assignsOnly reports whether a command is only variable assignments (a
// message kept for later), not an environment prefix of a command.
func assignsOnly(words []string) bool {
	inQuote := byte(0)
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			if c := w[i]; (c == '"' || c == '\'') && (inQuote == 0 || inQuote == c) {
				if inQuote == 0 {
					inQuote = c
				} else {
					inQuote = 0
				}
			}
		}
	}
	last := words[len(words)-1]
	return inQuote == 0 && (strings.HasSuffix(last, `"`) || strings.HasSuffix(last, `'`))
}

// splitCommands splits a shell line at ;, &&, || and | outside quotes.
func splitCommands(line string) []string {
	var out []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == ';' || c == '|' || (c == '&' && i+1 < len(line) && line[i+1] == '&'):
			out = append(out, cur.String())
			cur.Reset()
			if i+1 < len(line) && (line[i+1] == '|' || line[i+1] == '&') {
				i++
			}
			continue
		}
		cur.WriteByte(c)
	}
	return append(out, cur.String())
}

// TestInstallAdviceCatches: the detector flags the lines that told the user
// to install a package (the old build-images.sh, ensure-chromium.sh and
// Makefile lines) and passes the ones that install or only report.
func TestInstallAdviceCatches(t *testing.T) {
	advice := []string{
		`		echo "a static busybox is needed (apt-get install busybox-static)" >&2`,
		`		echo "PostgreSQL server binaries not found under /usr/lib/postgresql: apt-get install -y postgresql" >&2`,
		`	echo "chromium missing: run as root: apt-get install -y chromium fonts-liberation" >&2`,
		`	@command -v $(GO) >/dev/null 2>&1 || { echo "Go 1.26 or newer is needed (go.mod); install it into /usr/local/go"; exit 1; }`,
		`	printf '%s\n' 'missing: apt install redis-tools'; exit 1`,
		`	[ -x /bin/busybox ] || die "busybox-static missing: please install it"`,
		`msg="redis-server missing (apt-get install redis-server)"`,
		`$(error redis-server missing: install it first)`,
	}
	for _, l := range advice {
		if _, ok := installAdvice(l); !ok {
			t.Errorf("not caught: %s", l)
		}
	}
	fine := []string{
		`		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \`,
		`if ! { apt-get update -qq && apt-get install -y -qq $missing; } >"$log" 2>&1; then`,
		`		echo "redis-server missing: installing it with apt-get"; \`,
		`echo "installing: busybox-static (apt-get)" >&2`,
		`# ensure-docker.sh start   install Debian's docker.io with apt-get install when missing`,
		`	echo "missing Debian packages: $missing; installing them needs root: run make deps-test as root" >&2`,
		`DEBIAN_FRONTEND=noninteractive apt-get install -y chromium`,
	}
	for _, l := range fine {
		if text, ok := installAdvice(l); ok {
			t.Errorf("false finding %q in: %s", text, l)
		}
	}
}

// setupScripts lists, relative to the repository root, the Makefile,
// .ci/run, and every script (by .sh/.bash or a #! line) under a testdata
// directory or deploy/, plus deploy/'s manifests.
func setupScripts(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"Makefile", filepath.Join(".ci", "run")}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "bin" || n == "out" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		inDeploy := parts[0] == "deploy"
		if inDeploy && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md")) {
			return nil
		}
		if inDeploy || (isUnderTestdata(parts) && isScript(p)) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func isUnderTestdata(parts []string) bool {
	for _, s := range parts[:len(parts)-1] {
		if s == "testdata" {
			return true
		}
	}
	return false
}

func isScript(p string) bool {
	if strings.HasSuffix(p, ".sh") || strings.HasSuffix(p, ".bash") {
		return true
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := f.Read(head)
	return n == 2 && string(head) == "#!"
}

// logicalLines yields a file's lines with backslash continuations joined,
// numbered by their first physical line.
func logicalLines(data []byte, fn func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var acc strings.Builder
	start, n := 0, 0
	for sc.Scan() {
		n++
		if acc.Len() == 0 {
			start = n
		}
		l := sc.Text()
		if strings.HasSuffix(l, `\`) {
			acc.WriteString(strings.TrimSuffix(l, `\`))
			continue
		}
		acc.WriteString(l)
		fn(start, acc.String())
		acc.Reset()
	}
	if acc.Len() > 0 {
		fn(start, acc.String())
	}
}

var (
	aptInstallRun = regexp.MustCompile(`(^|[\s;{(&|])apt(-get)?\s+(-\S+\s+)*install\b`)
	pkgsVarRef    = regexp.MustCompile(`\bPKGS_[A-Z_]+\b`)
)

// TestScriptsInstallInsteadOfTelling: no script under testdata/,
// */testdata/, deploy/ nor the Makefile tells the user to install a
// package; only testdata/install-packages.sh runs apt-get install (the
// one installer), and every PKGS_* name a script hands it is a variable
// the Makefile defines.
func TestScriptsInstallInsteadOfTelling(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(PKGS_[A-Z_]+)\s*:=\s*\S`).FindAllStringSubmatch(string(mk), -1) {
		defined[m[1]] = true
	}
	if len(defined) == 0 {
		t.Fatal("the Makefile defines no PKGS_* variable")
	}
	files := setupScripts(t, root)
	t.Logf("checked %d files: %s", len(files), strings.Join(files, " "))
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		logicalLines(data, func(n int, line string) {
			if text, ok := installAdvice(line); ok {
				t.Errorf("%s:%d tells the user to install instead of installing (%q): list the package in a Makefile PKGS_* variable and install it with testdata/install-packages.sh", rel, n, text)
			}
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "#") {
				return
			}
			if rel == filepath.Join("testdata", "install-packages.sh") {
				return // the installer itself: runs apt-get, resolves PKGS_* names
			}
			if aptInstallRun.MatchString(code) {
				if _, isMsg := installAdvice(line); !isMsg {
					t.Errorf("%s:%d runs apt-get install itself: hand the Makefile's PKGS_* variable to testdata/install-packages.sh instead (the one installer)", rel, n)
				}
			}
			for _, v := range pkgsVarRef.FindAllString(code, -1) {
				if !defined[v] {
					t.Errorf("%s:%d names %s, which the Makefile does not define", rel, n, v)
				}
			}
		})
	}
}

// TestInstallPackagesHelper: the helper installs nothing and prints
// nothing when everything is present (redis-server is, wherever these
// tests run), and refuses a PKGS_* name the Makefile lacks with exit 2.
func TestInstallPackagesHelper(t *testing.T) {
	helper := filepath.Join("..", "testdata", "install-packages.sh")
	out, err := exec.Command("sh", helper, "PKGS_RUN").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("PKGS_RUN present: err %v, output %q; want none", err, out)
	}
	out, err = exec.Command("sh", helper, "PKGS_NO_SUCH_LIST").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "PKGS_NO_SUCH_LIST is not a variable") {
		t.Errorf("unknown list: err %v, output %q; want exit 2 naming it", err, out)
	}
}
