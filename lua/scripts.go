package lua

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill-harness/internal/boundedread"
)

// File names of the three scripts, embedded or in a --lua-dir.
const (
	ReserveFile    = "reserve.lua"
	TransitionFile = "transition.lua"
	CompensateFile = "compensate.lua"
)

//go:embed reserve.lua transition.lua compensate.lua
var embedded embed.FS

// Script is one Lua script run with EVALSHA, falling back to EVAL when the
// node answers NOSCRIPT (script caches are per node and are not replicated:
// the first call after a failover or restart meets an empty cache).
type Script struct {
	Name   string // file name, e.g. reserve.lua
	Source string
	SHA1   string
}

func newScript(name, src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Name: name, Source: src, SHA1: hex.EncodeToString(sum[:])}
}

// Run sends EVALSHA and, on NOSCRIPT only, EVAL with the same keys and args.
// fellBack reports whether EVAL was needed. The error is the reply's error;
// with a client from this package a lost reply is an *OutcomeUnknownError.
// Run never re-sends after any other error.
func (s *Script) Run(ctx context.Context, rdb redis.Scripter, keys []string, args ...any) (reply any, fellBack bool, err error) {
	if len(args) > 0 {
		// A caller may place the probe itself (Store.Reserve does, to save a copy of args).
		if first, ok := args[0].(string); ok {
			// Lets the no-re-send hook tell a call that never reached a
			// socket (its connection's handshake failed) from a lost reply.
			args = append([]any{&writeProbe{s: first}}, args[1:]...)
		}
	}
	reply, err = rdb.EvalSha(ctx, s.SHA1, keys, args...).Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		reply, err = rdb.Eval(ctx, s.Source, keys, args...).Result()
		return reply, true, err
	}
	return reply, false, err
}

// runArgv is Run for a caller that built the whole command in one slice:
// argv is [_, _, numkeys, keys…, args…] (slots 0 and 1 are filled here with
// EVALSHA and the SHA1 unless slot 1 is set: then they must be "evalsha" and
// s's SHA1, boxed once by the caller) with the write probe already first among the args.
// Built this way a call allocates one argument slice instead of three and
// boxes no key twice. Semantics are Run's: EVAL with the same keys and args
// on NOSCRIPT only.
func (s *Script) runArgv(ctx context.Context, rdb redis.UniversalClient, argv []any) (reply any, fellBack bool, err error) {
	if argv[1] == nil { // a caller may have filled them in, boxed once
		argv[0], argv[1] = "evalsha", s.SHA1
	}
	cmd := redis.NewCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3)
	_ = rdb.Process(ctx, cmd)
	reply, err = cmd.Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		ev := append([]any{"eval", s.Source}, argv[2:]...)
		cmd = redis.NewCmd(ctx, ev...)
		cmd.SetFirstKeyPos(3)
		_ = rdb.Process(ctx, cmd)
		reply, err = cmd.Result()
		return reply, true, err
	}
	return reply, false, err
}

// Scripts is the set of three scripts a run uses.
type Scripts struct {
	Reserve    *Script
	Transition *Script
	Compensate *Script
	// Origin is "embedded" or the directory the scripts were read from.
	Origin string
}

// Embedded returns the project's own scripts.
func Embedded() *Scripts {
	s, err := loadFS(embedded, "embedded")
	if err != nil {
		panic(err) // the files are compiled in: this cannot happen in a built binary
	}
	return s
}

// LoadDir reads reserve.lua, transition.lua and compensate.lua from dir, so a
// team can test its own production scripts against the same contract
// (the contract in docs/ARCHITECTURE.md: same KEYS, ARGV and return tuples). The error names the
// missing or empty file.
func LoadDir(dir string) (*Scripts, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("lua dir %q: %w (give a directory holding %s, %s and %s)", dir, err, ReserveFile, TransitionFile, CompensateFile)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("lua dir %q is not a directory (give a directory holding %s, %s and %s)", dir, ReserveFile, TransitionFile, CompensateFile)
	}
	abs, _ := filepath.Abs(dir)
	return load(func(name string) ([]byte, error) {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		return boundedread.File(path, MaxScriptBytes, "--lua-dir script", "a script of the reserve path is a few KiB: give --lua-dir a directory of regular .lua files")
	}, abs)
}

// MaxScriptBytes is the largest script LoadDir reads (1 MiB).
const MaxScriptBytes = boundedread.MiB

func loadFS(fsys fs.FS, origin string) (*Scripts, error) {
	return load(func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) }, origin)
}

func load(readFile func(name string) ([]byte, error), origin string) (*Scripts, error) {
	read := func(name string) (*Script, error) {
		b, err := readFile(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("lua dir %s has no %s: the directory needs %s, %s and %s", origin, name, ReserveFile, TransitionFile, CompensateFile)
			}
			return nil, fmt.Errorf("read %s/%s: %w", origin, name, err)
		}
		if strings.TrimSpace(string(b)) == "" {
			return nil, fmt.Errorf("%s/%s is empty", origin, name)
		}
		return newScript(name, string(b)), nil
	}
	var s Scripts
	var err error
	if s.Reserve, err = read(ReserveFile); err != nil {
		return nil, err
	}
	if s.Transition, err = read(TransitionFile); err != nil {
		return nil, err
	}
	if s.Compensate, err = read(CompensateFile); err != nil {
		return nil, err
	}
	s.Origin = origin
	return &s, nil
}
