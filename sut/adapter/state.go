package adapter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Setup remembers a, loads the file's scripts on every master (SCRIPT
// LOAD, so the load meets no NOSCRIPT) and runs the file's setup for every
// bucket. It refuses a file without setup: (the activity must then be
// set up by other means, which a run does not do).
func (s *System) Setup(ctx context.Context, a *lua.Activity) error {
	if s.file.Setup == nil {
		return fmt.Errorf("adapter %s declares no setup:, so the harness cannot create the activity: add setup: with the commands that create a bucket with its ${stock} (docs/ADAPTERS.md)", s.file.Name)
	}
	s.mu.Lock()
	s.act = a
	s.mu.Unlock()
	if err := s.loadScripts(ctx); err != nil {
		return err
	}
	for b := uint32(0); b < a.Buckets; b++ {
		cmds, keys, args, _, err := s.file.SetupCommands(ActivityValues(a, b))
		if err != nil {
			return fmt.Errorf("adapter %s: render the setup of bucket %d: %w", s.file.Name, b, err)
		}
		if s.setup != nil {
			if _, _, _, err := s.run(ctx, s.setup, keys, args); err != nil {
				return fmt.Errorf("adapter %s: setup script of bucket %d: %w", s.file.Name, b, err)
			}
			continue
		}
		for _, c := range cmds {
			if err := s.rdb.Do(ctx, anys(c)...).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("adapter %s: setup of bucket %d: %v: %w", s.file.Name, b, c, err)
			}
		}
	}
	return nil
}

// loadScripts sends SCRIPT LOAD of every script of the file to every
// master (one node without a cluster client).
func (s *System) loadScripts(ctx context.Context) error {
	scripts := make([]*lua.Script, 0, 3)
	for _, op := range []Op{OpReserve, OpRelease} {
		if sc := s.scripts[op]; sc != nil {
			scripts = append(scripts, sc)
		}
	}
	if s.setup != nil {
		scripts = append(scripts, s.setup)
	}
	load := func(ctx context.Context, node redis.Scripter) error {
		for _, sc := range scripts {
			if err := node.ScriptLoad(ctx, sc.Source).Err(); err != nil {
				return fmt.Errorf("adapter %s: SCRIPT LOAD %s: %w", s.file.Name, sc.Name, err)
			}
		}
		return nil
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return load(ctx, node) })
	}
	return load(ctx, s.rdb)
}

// anys is ss as command arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, x := range ss {
		out[i] = x
	}
	return out
}

// Teardown deletes the keys teardown: and the calls' built_keys: list: a
// template over bucket values for every bucket, one over a user, request
// or reservation for every call the run sent. Without either: nothing is
// removed (the keys expire as the script set them).
func (s *System) Teardown(ctx context.Context, a *lua.Activity) (int64, error) {
	if len(s.file.tmpl.teardown) == 0 {
		return 0, nil
	}
	refs, err := s.keyspace(a, s.file.tmpl.teardown)
	if err != nil {
		return 0, err
	}
	var n int64
	for start := 0; start < len(refs); start += 1000 {
		batch := refs[start:min(start+1000, len(refs))]
		cmds := make([]*redis.IntCmd, len(batch))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range batch {
				cmds[i] = p.Del(ctx, r.Key)
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("adapter %s: teardown: %w", s.file.Name, err)
		}
		for _, c := range cmds {
			n += c.Val()
		}
	}
	return n, nil
}

// keyspace renders ts (teardown or expiring keys) over a's buckets and
// the calls the run sent, without duplicates, sorted. A key's kind is its
// template; SetUp marks a key the setup commands name.
func (s *System) keyspace(a *lua.Activity, ts []Template) ([]sut.KeyRef, error) {
	seen := map[string]bool{}
	var out []sut.KeyRef
	add := func(t Template, v Values) error {
		tag, err := s.file.Tag(v)
		if err != nil {
			return err
		}
		k, err := t.render(&v, tag)
		if err != nil {
			return err
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, sut.KeyRef{Key: k, Kind: t.Text, Bucket: v.Bucket})
		}
		return nil
	}
	calls := s.reachedCalls()
	for _, t := range ts {
		perCall := t.scopeOf(s.file.tmpl.hashTag)&^ctxBucket != 0
		for b := uint32(0); b < a.Buckets && !perCall; b++ {
			if err := add(t, ActivityValues(a, b)); err != nil {
				return nil, err
			}
		}
		for rid, c := range calls {
			if !perCall {
				break
			}
			v := ActivityValues(a, c.bucket)
			v.User, v.Request, v.Reservation, v.Message = c.user, c.request, rid, lua.MessageID(rid)
			if err := add(t, v); err != nil {
				return nil, err
			}
		}
	}
	set := s.setUpKeys(a)
	for i := range out {
		out[i].SetUp = set[out[i].Key]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// setUpKeys are the words of the rendered setup (commands and setup
// script KEYS) of every bucket: a key among them was written by the setup.
func (s *System) setUpKeys(a *lua.Activity) map[string]bool {
	out := map[string]bool{}
	for b := uint32(0); b < a.Buckets; b++ {
		cmds, keys, _, _, err := s.file.SetupCommands(ActivityValues(a, b))
		if err != nil {
			continue
		}
		for _, c := range cmds {
			for _, w := range c {
				out[w] = true
			}
		}
		for _, k := range keys {
			out[k] = true
		}
	}
	return out
}

// Exposes is the file's Facts.
func (s *System) Exposes() []sut.Fact { return s.file.Facts() }

// ReadStock reads state.available and state.held of bucket b (held 0
// when the file declares state.available alone: sut.Available without
// sut.Stock); initial is the bucket's planned stock and released_total
// the releases the system answered RELEASED (or ALREADY_RELEASED) in the
// bucket: a file declares no counter of its own for it.
func (s *System) ReadStock(ctx context.Context, a *lua.Activity, b uint32) (lua.Stock, error) {
	v := ActivityValues(a, b)
	names := []string{"available", "held"}
	if s.file.tmpl.reads["held"] == nil {
		names = names[:1]
	}
	cmds := make([][]string, len(names))
	for i, name := range names {
		cmd, ok, err := s.file.StateRead(name, v)
		if err != nil || !ok {
			return lua.Stock{}, fmt.Errorf("adapter %s: state.%s of bucket %d: %v", s.file.Name, name, b, err)
		}
		cmds[i] = cmd
	}
	// One MULTI/EXEC: both reads see one moment (when their keys share a
	// slot, as a cluster-safe file's do), never a reservation in between.
	got := make([]*redis.Cmd, len(cmds))
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cmds {
			got[i] = p.Do(ctx, anys(c)...)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return lua.Stock{}, fmt.Errorf("adapter %s: read state.%s of bucket %d: %w", s.file.Name, strings.Join(names, " and state."), b, err)
	}
	var n [2]int64
	for i, c := range got {
		raw, err := c.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return lua.Stock{}, fmt.Errorf("adapter %s: read state.%s %v: %w", s.file.Name, names[i], cmds[i], err)
		}
		if n[i], err = asInt(raw); err != nil {
			return lua.Stock{}, fmt.Errorf("adapter %s: state.%s %v of bucket %d: %v", s.file.Name, names[i], cmds[i], b, err)
		}
	}
	s.mu.Lock()
	var released int64
	for _, rb := range s.released {
		if rb == b {
			released++
		}
	}
	s.mu.Unlock()
	return lua.Stock{Initial: a.BucketStock(b), Available: n[0], Reserved: n[1], ReleasedTotal: released}, nil
}

// ReadQueues is never called: a file declares no queues (sut.Queues).
func (s *System) ReadQueues(context.Context, *lua.Activity, uint32) ([]string, []string, error) {
	return nil, nil, fmt.Errorf("adapter %s exposes no send_pending and expiry queues", s.file.Name)
}

// ReadRequests is never called: a file declares no cached request
// results (sut.Requests).
func (s *System) ReadRequests(context.Context, *lua.Activity, []sut.RequestRef) ([]sut.RequestFact, error) {
	return nil, fmt.Errorf("adapter %s exposes no cached request results", s.file.Name)
}

// ReadRecords reads state.record of every id of want the run sent (an id
// it never sent has no record it could name): a truthy reply is a record
// of the user the call was for (RESERVED). A reservation the system
// answered RELEASED or ALREADY_RELEASED is a RELEASED record whether or
// not the read still finds it (a release script may delete it).
func (s *System) ReadRecords(ctx context.Context, a *lua.Activity, want map[string]uint32) (map[string]sut.Record, error) {
	calls := s.reachedCalls()
	ids := make([]string, 0, len(want))
	for id := range want {
		if _, ok := calls[id]; ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make(map[string]sut.Record, len(ids))
	for start := 0; start < len(ids); start += 1000 {
		batch := ids[start:min(start+1000, len(ids))]
		cmds := make([]*redis.Cmd, len(batch))
		var rerr error
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range batch {
				c := calls[id]
				v := ActivityValues(a, c.bucket)
				v.User, v.Request, v.Reservation, v.Message = c.user, c.request, id, lua.MessageID(id)
				cmd, _, err := s.file.StateRead("record", v)
				if err != nil {
					rerr = err
					return err
				}
				cmds[i] = p.Do(ctx, anys(cmd)...)
			}
			return nil
		})
		if rerr != nil {
			return nil, fmt.Errorf("adapter %s: render state.record: %w", s.file.Name, rerr)
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("adapter %s: read reservation records: %w", s.file.Name, err)
		}
		s.mu.Lock()
		for i, c := range cmds {
			id := batch[i]
			_, released := s.released[id]
			v, err := c.Result()
			switch {
			case released: // a release script may delete the record it released
				out[id] = sut.Record{Status: lua.StatusReleased, User: calls[id].user, Bucket: calls[id].bucket}
			case err == nil && truthy(v):
				out[id] = sut.Record{Status: lua.StatusReserved, User: calls[id].user, Bucket: calls[id].bucket}
			}
		}
		s.mu.Unlock()
	}
	return out, nil
}

// ReadKeys reads the expiry of every key state.expiring_keys names, over
// a's buckets and every call the run sent.
func (s *System) ReadKeys(ctx context.Context, a *lua.Activity, q sut.KeyQuery) (*sut.KeyFacts, error) {
	refs, err := s.keyspace(a, s.file.tmpl.expiring)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: render state.expiring_keys: %w", s.file.Name, err)
	}
	return sut.ReadKeyExpiries(ctx, s.rdb, a, refs, q.Allowances)
}
