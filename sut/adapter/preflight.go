package adapter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
	"seckill-harness/sut"
)

// Preflight runs f's scripts on a few sample calls against the throwaway
// activity a on rdb and reports, as findings, what Redis Cluster will not
// let them do under load. The run calls it before the load, after the
// stand is up and before the activity of the run is set up, and refuses
// to load a script with a finding Redis refused (Finding.Refuses);
// StaticFindings are the other half: what the text shows without a
// cluster.
//
// What it reports:
//   - KindSlots: the KEYS of one call are in different slots; Redis
//     refuses the call ("CROSSSLOT Keys in request don't hash to the same
//     slot").
//   - KindUndeclared: a call touched a key it does not pass in KEYS. On
//     another node Redis refuses it ("Script attempted to access a non
//     local key in a cluster node"); in another slot of the same node
//     Redis 7.0 runs it (and fails the same call after a resharding); in
//     the call's own slot it runs but is still a key the cluster and the
//     harness do not know. The finding names the keys and the script line.
//   - KindScriptError: a call failed with an error of the script's own
//     (with Redis's text and the script line).
//   - KindRefusedCommand: a call (or a setup script whose command names
//     are not all written out) reached a command the harness refuses by
//     a name the text does not write out; the recorder stopped it before
//     Redis ran it, and the finding refuses the load (a refused command
//     written out never gets here: Load refuses the file).
//
// How: each sample call runs the script with a recorder round redis.call
// and redis.pcall (the script's text is unchanged and keeps its line
// numbers): the recorder notes every command and its line, COMMAND
// GETKEYS names the keys. The sample calls are reserve calls
// of u1 (one request re-sent, a second request), of other users of u1's
// bucket until it is sold out, of u2..u4 and, if f declares release, a
// release of u1's first. a should have 2 units per bucket
// (PreflightUnits): u1's second request then runs while stock remains
// (a script that breaks only on its per-user branch is caught there) and
// the sold-out path runs too. A finding Redis refused (Finding.Refuses)
// refuses the load; the others fail A1 and the load runs.
//
// a must be throwaway: Preflight runs f's setup for each of its buckets
// first, and afterwards deletes every key the setup and the calls touched
// or the teardown names whose name contains a's id or a sample request or
// reservation id (a key shared beyond the activity, such as one global
// stream, is left as it is, with the sample calls' writes). The error is
// for what is no finding: an activity or client missing, a setup that
// fails, Redis unreachable, a failed clean-up.
func Preflight(ctx context.Context, rdb *redis.ClusterClient, f *File, a *lua.Activity) ([]Finding, error) {
	return preflightWatched(ctx, rdb, f, a, nil)
}

// preflightWatched is Preflight with the run's script watchdog (nil:
// none): a sample call whose reply was lost may be a script that never
// returns, which holds its node (BUSY) until it is killed; the watchdog
// stops it before the clean-up, and the error says the script ran past
// its limit and was killed, naming the limit and the node.
func preflightWatched(ctx context.Context, rdb *redis.ClusterClient, f *File, a *lua.Activity, w *lua.Watchdog) ([]Finding, error) {
	if rdb == nil || f == nil || a == nil {
		return nil, errors.New("adapter preflight: needs a cluster client, a loaded adapter file and a throwaway activity")
	}
	p := &preflight{rdb: rdb, f: f, a: a, at: map[string]int{}, touched: map[string]bool{}}
	p.calls = p.sampleCalls()
	err := p.setup(ctx)
	if err == nil && len(p.out) == 0 { // a refused command in the setup: no call
		for _, c := range p.calls {
			since := 0
			if w != nil {
				since = len(w.Kills())
			}
			if err = p.call(ctx, c.op, c.v); err != nil {
				if w != nil && lua.IsOutcomeUnknown(err) {
					kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killWait)
					if kerr := w.KilledPastLimit(kctx, fmt.Sprintf("adapter preflight: the %s call of %s got no reply", c.op, f.Script(c.op).Path), since); kerr != nil {
						err = kerr
					}
					cancel()
				}
				break
			}
		}
	}
	// Clean up also after ctx ended: the keys must not outlive the check.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return p.out, errors.Join(err, p.clean(cctx))
}

var _ sut.Preflighter = (*System)(nil)

// killWait bounds the watchdog's sweep after a pre-flight call lost its
// reply: a node inside a script serves SCRIPT KILL only once the script
// ran busy-reply-threshold (5 s by default).
const killWait = 15 * time.Second

// PreflightUnits is the stock of each bucket of the system's pre-flight
// activity: two, so u1's second request runs while one unit is left.
const PreflightUnits = 2

// Preflight is the system's pre-flight (sut.Preflighter): Preflight on a
// throwaway activity of its own ("<a's id>-preflight", a's SKU, at most 8
// buckets of PreflightUnits units each, so a user's second request runs
// while stock remains and the sold-out path runs too), on the system's
// cluster client. Its findings are the file's as sut.Finding; with
// preflight: strict in the file (or --strict-preflight) every finding
// refuses the load, not only those Redis refused.
func (s *System) Preflight(ctx context.Context, a *lua.Activity) ([]sut.Finding, error) {
	rdb, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return nil, fmt.Errorf("adapter %s: the pre-flight needs a Redis Cluster client", s.file.Name)
	}
	b := min(a.Buckets, 8)
	pa := lua.NewActivity(a.ID+"-preflight", a.SKU, PreflightUnits*int64(b), b, time.Hour)
	var w *lua.Watchdog
	if s.st != nil {
		w = s.st.Watchdog()
	}
	found, err := preflightWatched(ctx, rdb, s.file, pa, w)
	out := make([]sut.Finding, 0, len(found))
	for _, x := range found {
		out = append(out, sut.Finding{Problem: x.Problem(), Kind: x.Kind, Where: x.Where, Keys: x.Keys, Detail: x.Detail,
			Refuses: x.Refuses || s.file.Strict()})
	}
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

type preflight struct {
	rdb     *redis.ClusterClient
	f       *File
	a       *lua.Activity
	out     []Finding
	at      map[string]int  // Kind+Where -> index in out
	touched map[string]bool // keys to consider for clean-up
	calls   []sampleCall
}

type sampleCall struct {
	op Op
	v  Values
}

// sampleCalls are the reserve calls and, if f declares one, a release of
// u1's first reservation. They run both paths a script has for a user's
// second request: u1 r1, u1 r1 re-sent and u1 r2 while u1's bucket still
// holds stock (a.Stock of at least 2 per bucket; a script's per-user
// branch runs only then, a sold-out bucket answers before it), then as
// many other users of u1's bucket as it has units (capped at
// maxSoldOutUsers), the last of which finds it sold out, then u2..u4
// wherever they fall (other buckets).
func (p *preflight) sampleCalls() []sampleCall {
	st := lua.NewStore(nil, nil, []byte("adapter-preflight"))
	var out []sampleCall
	seq := 0
	reserve := func(user string) {
		seq++
		c, err := st.NewReserveCall(p.a, user, fmt.Sprintf("preflight-%s-r%d", p.a.ID, seq), time.Minute)
		if err != nil {
			return // an id the contract refuses: not this sample
		}
		v := CallValues(p.a, c)
		v.NowMs = time.Now().UnixMilli()
		out = append(out, sampleCall{OpReserve, v})
	}
	reserve("u1")
	if len(out) > 0 {
		out = append(out, out[0]) // the same request re-sent
	}
	reserve("u1")
	home := p.a.BucketOf("u1")
	need := min(p.a.BucketStock(home), maxSoldOutUsers)
	for i := 5; need > 0 && i < 5+maxSoldOutCandidates; i++ {
		if u := fmt.Sprintf("u%d", i); p.a.BucketOf(u) == home {
			reserve(u)
			need--
		}
	}
	for _, u := range []string{"u2", "u3", "u4"} {
		reserve(u)
	}
	if len(out) > 0 && p.f.Has(OpRelease) {
		r := out[0].v
		r.Reason = "preflight"
		out = append(out, sampleCall{OpRelease, r})
	}
	return out
}

// maxSoldOutUsers bounds the users sent to sell u1's bucket out (a larger
// bucket is not sold out by the sample); maxSoldOutCandidates bounds the
// user names tried to find them.
const (
	maxSoldOutUsers      = 8
	maxSoldOutCandidates = 4096
)

// setup runs f's setup for every bucket of a.
func (p *preflight) setup(ctx context.Context) error {
	for b := uint32(0); b < p.a.Buckets; b++ {
		cmds, keys, args, ok, err := p.f.SetupCommands(ActivityValues(p.a, b))
		if err != nil || !ok {
			return err
		}
		if cmds == nil {
			p.touch(keys...)
			src := p.f.scripts["setup.script"]
			if ran, err := p.guardSetup(ctx, src, b, keys, args); err != nil || ran {
				if err != nil || len(p.out) > 0 {
					return err
				}
				continue
			}
			if err := p.rdb.Eval(ctx, src.Source, keys, anys(args)...).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("adapter preflight: the setup script of %s failed for bucket %d: %w", p.f.Path, b, err)
			}
			continue
		}
		for _, c := range cmds {
			if ks, err := p.rdb.CommandGetKeys(ctx, anys(c)...).Result(); err == nil {
				p.touch(ks...)
			}
			if err := p.rdb.Do(ctx, anys(c)...).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("adapter preflight: setup command %v of %s failed: %w", c, p.f.Path, err)
			}
		}
	}
	return nil
}

// guardSetup runs a setup script whose command names are not all
// written out (Load checked the others) under the recorder, in place of
// its plain run: a refused command it reaches is a finding that refuses
// the load, and the recorder stops it before Redis runs it. ran is false
// when the script is for a plain run.
func (p *preflight) guardSetup(ctx context.Context, s *Script, b uint32, keys, args []string) (ran bool, err error) {
	if len(commandFindings(s)) == 0 {
		return false, nil
	}
	reply, err := p.rdb.Eval(ctx, instrument(s.Source), keys, anys(args)...).Result()
	errText, log, ok := parseRecord(reply)
	for _, e := range log {
		if why := refusal(e.args[0]); why != "" {
			p.add(refusedFinding(s.Path, e.line, "the setup script", strings.ToUpper(e.args[0]), why))
			return true, nil
		}
	}
	if err == nil && !ok {
		err = errors.New("the recorder's reply is not {error, log}")
	}
	if err == nil && errText != "" {
		err = errors.New(errText)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return true, fmt.Errorf("adapter preflight: the setup script of %s failed for bucket %d: %w", p.f.Path, b, err)
	}
	return true, nil
}

func (p *preflight) touch(keys ...string) {
	for _, k := range keys {
		p.touched[k] = true
	}
}

// add records x, merging it into an earlier finding of the same kind at
// the same place (the keys of several calls).
func (p *preflight) add(x Finding) {
	id := x.Kind + "|" + x.Where
	i, ok := p.at[id]
	if !ok {
		p.at[id] = len(p.out)
		p.out = append(p.out, x)
		return
	}
	if x.Refuses && !p.out[i].Refuses {
		p.out[i].Refuses, p.out[i].Detail = true, x.Detail // Redis's refusal is the word to keep
	}
	for _, k := range x.Keys {
		if !contains(p.out[i].Keys, k) {
			p.out[i].Keys = append(p.out[i].Keys, k)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clean deletes the touched keys and the teardown's keys of the sample
// calls that belong to the throwaway activity or its sample ids.
func (p *preflight) clean(ctx context.Context) error {
	for _, c := range p.calls {
		p.touch(p.f.teardownKeys(c.v)...)
	}
	var errs []error
	for k := range p.touched {
		if !p.owned(k) {
			continue
		}
		if err := p.rdb.Del(ctx, k).Err(); err != nil {
			errs = append(errs, fmt.Errorf("adapter preflight: deleting %q: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

func (p *preflight) owned(key string) bool {
	if strings.Contains(key, p.a.ID) {
		return true
	}
	for _, c := range p.calls {
		if strings.Contains(key, c.v.Request) || strings.Contains(key, c.v.Reservation) {
			return true
		}
	}
	return false
}

// reLine finds the script line in a Lua error ("user_script:11: ...") or
// in Redis's suffix ("on @user_script:11.").
var reLine = regexp.MustCompile(`user_script:(\d+)[:.]`)

func scriptLine(msg string) int {
	if m := reLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// teardownKeys renders the teardown's keys with v (those that render).
func (f *File) teardownKeys(v Values) []string {
	tag, err := f.Tag(v)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range f.tmpl.teardown {
		if k, err := t.render(&v, tag); err == nil {
			out = append(out, k)
		}
	}
	return out
}
