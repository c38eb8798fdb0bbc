package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"seckill-harness/lua"
)

// TestCLIChild is not a test of its own: started by cliChild with
// SECKILL_CLI_CHILD set, it runs the CLI with the arguments in
// SECKILL_CLI_ARGS and exits with its code. A child is a real process
// whose /proc/self/environ holds the environment it was started with
// (os.Setenv in the test process never reaches that file).
func TestCLIChild(t *testing.T) {
	raw := os.Getenv("SECKILL_CLI_CHILD")
	if raw == "" {
		t.Skip("run as a child by the tests that need a real process environment")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
}

// cliChild runs the CLI with args in a child process whose environment
// is the test's plus env, and returns its exit code and its stdout and
// stderr together.
func cliChild(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), "SECKILL_CLI_CHILD="+string(raw))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A path written in a scenario or an adapter file stays inside that file's
// directory: a scenario naming /proc/self/environ as its service mapping,
// /etc/passwd as its adapter, an adapter naming a script outside its
// directory (directly or through a symlink) is refused with exit 2, and
// the output holds nothing of the file it named: no part of the
// environment (a secret put in it for the test), no line of /etc/passwd,
// not the SHA1 of the script.
func TestScenarioFilesCannotReachOtherFiles(t *testing.T) {
	const secret = "s3cr3t-7Hq2vX9kLm4Np8Rt"
	env := []string{"SECKILL_TEST_SECRET=" + secret}
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	outside := filepath.Join(dir, "outside")
	// A Lua script outside the scenarios' directory: a real reserve script, so
	// an adapter naming it would load and print its SHA1.
	script := lua.Embedded().Reserve.Source
	mustWrite(t, filepath.Join(outside, "secret.lua"), script)
	sum := sha1.Sum([]byte(script))
	scriptSHA := hex.EncodeToString(sum[:])
	mustMkdir(t, in)
	mustSymlink(t, filepath.Join(outside, "secret.lua"), filepath.Join(in, "linked.lua"))
	adapterNaming := func(script string) string {
		return "reserve:\n  script: " + script + "\n  keys: [\"k:{${user}}\"]\n  args: [\"${request}\"]\n  reply: {outcomes: {ACCEPTED: [1], SOLD_OUT: [0]}}\n"
	}
	mustWrite(t, filepath.Join(in, "escape-adapter.yaml"), adapterNaming("../outside/secret.lua"))
	mustWrite(t, filepath.Join(in, "link-adapter.yaml"), adapterNaming("linked.lua"))
	mustWrite(t, filepath.Join(in, "shadow-adapter.yaml"), adapterNaming("../../../../../../../../etc/shadow"))
	scenario := func(name, body string) string {
		p := filepath.Join(in, name+".yaml")
		mustWrite(t, p, "name: "+name+"\n"+body)
		return p
	}
	environ := scenario("environ", "service: {url: \"http://127.0.0.1:1\", mapping: /proc/self/environ}\n")
	environRel := scenario("environ-rel", "service: {url: \"http://127.0.0.1:1\", mapping: ../../../../../../../../proc/self/environ}\n")
	passwd := scenario("passwd", "adapter: ../../../../../../../../etc/passwd\n")
	viaAdapter := scenario("via-adapter", "adapter: escape-adapter.yaml\n")
	viaLink := scenario("via-link", "adapter: link-adapter.yaml\n")
	mustWrite(t, filepath.Join(outside, "member.yaml"), "name: member\n")
	suite := scenario("suite", "suite: [smoke, ../outside/member.yaml]\n")

	leaks := func(t *testing.T, out string) {
		t.Helper()
		for _, bad := range []string{secret, "SECKILL_TEST_SECRET", "root:x:0:0:", "daemon:x:", scriptSHA} {
			if strings.Contains(out, bad) {
				t.Errorf("output quotes %q:\n%s", bad, out)
			}
		}
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); len(v) >= 8 && !strings.Contains(dir, v) && strings.Contains(out, kv) {
				t.Errorf("output holds the environment's %s:\n%s", k, out)
			}
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"mapping-proc-environ", []string{"validate", environ}, []string{"service.mapping: /proc/self/environ leaves", "--files-root"}},
		{"mapping-relative-environ", []string{"validate", environRel}, []string{"service.mapping: ../../", "leaves", "--files-root"}},
		{"adapter-etc-passwd", []string{"validate", passwd}, []string{"adapter: ../../", "leaves", "--files-root"}},
		{"script-outside", []string{"validate", viaAdapter}, []string{"reserve.script: ../outside/secret.lua leaves", "--files-root"}},
		{"script-symlink-out", []string{"validate", viaLink}, []string{"reserve.script: linked.lua is a symlink that leads out", "--files-root"}},
		{"suite-member-outside", []string{"validate", suite}, []string{"../outside/member.yaml leaves", "--files-root"}},
		{"adapter-validate-script-outside", []string{"adapter", "validate", filepath.Join(in, "escape-adapter.yaml")}, []string{"leaves", "--files-root"}},
		{"adapter-validate-etc-shadow", []string{"adapter", "validate", filepath.Join(in, "shadow-adapter.yaml")}, []string{"reserve.script: ../../", "leaves"}},
		// A root that holds them all lets the file reach it; the content
		// rule still holds: the environment is not a YAML text.
		{"files-root-environ", []string{"validate", "--files-root", "/", environ}, []string{"/proc/self/environ:1: not a YAML text file", "give a service mapping"}},
		{"files-root-passwd", []string{"validate", "--files-root", "/", passwd}, []string{"passwd:1: not a YAML mapping", "give an adapter file"}},
		{"files-root-missing", []string{"validate", "--files-root", filepath.Join(dir, "nope"), environ}, []string{"--files-root " + filepath.Join(dir, "nope"), "give an existing directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := cliChild(t, env, c.args...)
			if code != exitHarnessError {
				t.Errorf("exit %d, want 2:\n%s", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, out)
				}
			}
			leaks(t, out)
		})
	}
	// The same script is loaded once the user names a root that holds it.
	if code, out := cli(t, "adapter", "validate", "--files-root", dir, filepath.Join(in, "escape-adapter.yaml")); code != exitPass || !strings.Contains(out, scriptSHA) {
		t.Errorf("with --files-root %s: exit %d, want 0 naming the script's SHA1 %s:\n%s", dir, code, scriptSHA, out)
	}
}

// Errors about a file that parsed quote at most a few dozen bytes of any
// value: a long secret-looking value in a mapping reached through
// --files-root shows its first 32 bytes, never its tail.
func TestErrorsQuoteAtMostAFewDozenBytesOfAValue(t *testing.T) {
	dir := t.TempDir()
	tail := "TAIL-9f8e7d6c5b4a39281706"
	mustWrite(t, filepath.Join(dir, "creds", "mapping.yaml"), "timeout: \"0123456789abcdefghijklmnopqrstuvwxyz-"+tail+"\"\n")
	mustWrite(t, filepath.Join(dir, "s", "mapping.yaml"), "name: s\nservice: {url: \"http://127.0.0.1:1\", mapping: ../creds/mapping.yaml}\n")
	mustWrite(t, filepath.Join(dir, "s", "key.yaml"), "name: s\nunknown_"+strings.Repeat("x", 40)+tail+": 1\n")
	mustWrite(t, filepath.Join(dir, "s", "value.yaml"), "name: s\nactivity: {stock: \"0123456789abcdefghijklmnopqrstuvwxyz-"+tail+"\"}\n")
	for _, name := range []string{"mapping", "key", "value"} {
		args := []string{"validate", filepath.Join(dir, "s", name+".yaml")}
		if name == "mapping" {
			args = append(args, "--files-root", dir)
		}
		code, out := cli(t, args...)
		if code != exitHarnessError || strings.Contains(out, tail) {
			t.Errorf("%s: exit %d, want 2 without %q:\n%s", name, code, tail, out)
		}
		if !strings.Contains(out, "0123456789abcdefghijklmnopqrstuv…") && !strings.Contains(out, "xxxxxxxx…") {
			t.Errorf("%s: the value is not named by its first bytes:\n%s", name, out)
		}
	}
}

// docs/adapters/reference.yaml names a copy of lua/reserve.lua beside it
// (a path in a file stays in the file's directory): the copy is the
// embedded script, byte for byte.
func TestReferenceAdapterScriptIsTheEmbeddedOne(t *testing.T) {
	b, err := os.ReadFile("docs/adapters/lua/reserve.lua")
	if err != nil || string(b) != lua.Embedded().Reserve.Source {
		t.Fatalf("docs/adapters/lua/reserve.lua differs from lua/reserve.lua (%v): copy lua/reserve.lua over it", err)
	}
}
