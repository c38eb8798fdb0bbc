package adapter

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill-harness/compose"
	"seckill-harness/lua"
)

// dryStock is the stock of the dry calls' one bucket.
const dryStock = 2

// dryCall is one dry call of the script and what it answered.
type dryCall struct {
	label       string
	user, req   string
	reservation string
	reply       any
	err         string // Redis's error, "" when it answered
}

// The dry calls, in order (see Init).
var dryPlan = []dryCall{
	{label: "u1, request r1", user: "u1", req: "r1"},
	{label: "u1, request r1 re-sent", user: "u1", req: "r1"},
	{label: "u1 again, new request r2", user: "u1", req: "r2"},
	{label: "u2, request r3", user: "u2", req: "r3"},
	{label: "u3, request r4", user: "u3", req: "r4"},
}

// dryRun starts a one-node local cluster, sets the draft's stock up and
// makes the dry calls, then stops the cluster.
func (d *draft) dryRun(ctx context.Context) error {
	c, err := compose.Start(ctx, compose.Options{Masters: 1, ReplicasPerMaster: compose.NoReplicas})
	if err != nil {
		return fmt.Errorf("adapter init: the throwaway local cluster for the dry calls did not start: %w", err)
	}
	defer c.Close()
	rdb := lua.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer rdb.Close()
	d.reply = replyGuess{} // the draft's placeholder mapping, to load it
	f, err := d.load()
	if err != nil {
		return fmt.Errorf("adapter init: the draft does not load (a harness bug, please report it): %w", err)
	}
	a := lua.NewActivity("init", "sku1", dryStock, 1, time.Hour)
	if cmds, _, _, ok, err := f.SetupCommands(ActivityValues(a, 0)); ok && err == nil {
		for _, cmd := range cmds {
			if err := rdb.Do(ctx, anys(cmd)...).Err(); err != nil && err != redis.Nil {
				return fmt.Errorf("adapter init: setup %v: %w", cmd, err)
			}
		}
	}
	st := lua.NewStore(nil, nil, []byte("adapter-init"))
	for _, p := range dryPlan {
		call, err := st.NewReserveCall(a, p.user, p.req, time.Minute)
		if err != nil {
			return err
		}
		v := CallValues(a, call)
		v.NowMs = time.Now().UnixMilli()
		p.reservation = v.Reservation
		keys, args, err := f.Render(OpReserve, v)
		if err != nil {
			return fmt.Errorf("adapter init: %w", err)
		}
		p.reply, err = rdb.Eval(ctx, f.Script(OpReserve).Source, keys, anys(args)...).Result()
		if err != nil && err != redis.Nil {
			if _, isRedis := err.(redis.Error); !isRedis {
				return fmt.Errorf("adapter init: dry call %s: %w", p.label, err)
			}
			p.err = err.Error()
		}
		d.dry = append(d.dry, p)
	}
	return nil
}

// load loads the draft as it stands (script path absolute).
func (d *draft) load() (*File, error) {
	var f *File
	err := withTempFile(d.text(d.script), func(p string) (err error) {
		f, err = load(p, d.script) // the user's own script, given on the command line
		return err
	})
	return f, err
}

// replyGuess is the reply mapping Init guesses.
type replyGuess struct {
	code, rid int       // 1-based array elements; 0: the whole reply / the call's id
	outcomes  []guessed // in the order written
	otherwise string    // "" or ERROR
	notes     []string  // what the dry calls showed beside the mapping
	seen      map[string]bool
}

type guessed struct {
	outcome Outcome
	value   string
	why     string
}

func (g *replyGuess) add(o Outcome, value, why string) {
	if g.seen == nil {
		g.seen = map[string]bool{}
	}
	for _, x := range g.outcomes {
		if x.outcome == o || x.value == value {
			return
		}
	}
	g.outcomes = append(g.outcomes, guessed{o, value, why})
}

func (g *replyGuess) has(o Outcome) bool {
	for _, x := range g.outcomes {
		if x.outcome == o {
			return true
		}
	}
	return false
}

// text is a reply element as the mapping compares it.
func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	}
	return formatReply(v)
}

// guessReply reads the dry calls' replies into a mapping (see Init).
func (d *draft) guessReply() {
	g := &d.reply
	first := d.dry[0]
	if arr, ok := first.reply.([]any); ok && first.err == "" {
		for i, e := range arr {
			if _, isInt := e.(int64); isInt && g.code == 0 {
				g.code = i + 1
			}
			if s, isStr := e.(string); isStr && s != "" && s == first.reservation {
				g.rid = i + 1
			}
		}
		g.code = max(g.code, 1)
	}
	vals := make([]string, len(d.dry))
	for i, c := range d.dry {
		vals[i] = "error"
		if c.err == "" {
			vals[i] = d.codeText(c.reply)
		}
	}
	if first.err != "" || vals[0] == "error" {
		g.notes = append(g.notes, "the first call failed: the keys, args or setup are not what the script expects; fix them and run `adapter init` again, or write the mapping yourself")
		return
	}
	if d.stockBeforeDecrement(vals) {
		return
	}
	d.guessCodes(vals)
}

// codeText is the outcome element of reply as text ("?" when missing).
func (d *draft) codeText(reply any) string {
	if d.reply.code == 0 {
		return valueText(reply)
	}
	arr, ok := reply.([]any)
	if !ok || len(arr) < d.reply.code {
		return "?"
	}
	return valueText(arr[d.reply.code-1])
}

// stockBeforeDecrement recognises a script that answers the stock before
// its decrement: the first call answers the stock, a later one less.
func (d *draft) stockBeforeDecrement(vals []string) bool {
	g := &d.reply
	if vals[0] != strconv.Itoa(dryStock) || d.reply.code != 0 {
		return false
	}
	for _, v := range vals[1:] {
		if v == strconv.Itoa(dryStock-1) {
			g.add(Accepted, ">=1", "GUESS: the first call answered the stock (2) and a later one 1: the script answers the stock before its decrement")
			g.add(SoldOut, "0", "GUESS: no stock left")
			g.otherwise = string(Error)
			return true
		}
	}
	return false
}

// guessCodes maps the dry calls' outcome values one by one.
func (d *draft) guessCodes(vals []string) {
	g := &d.reply
	acc, resend, again, sold := vals[0], vals[1], vals[2], vals[4]
	g.add(Accepted, acc, "GUESS: what the first call (u1, r1) answered")
	if sold != acc && sold != "error" {
		g.add(SoldOut, sold, "GUESS: what u3 answered after u1 and u2 took the stock of 2")
	}
	switch {
	case again == acc:
		g.notes = append(g.notes, "u1's second request was answered like its first: the script may not enforce one unit per user (or ARGV's ${user} is not where the script reads the user)")
	case again != sold && again != "error":
		g.add(UserAlreadyReserved, again, "GUESS: what u1's second request (r2) answered")
	}
	switch {
	case resend == acc:
		g.notes = append(g.notes, "u1's re-sent request r1 was answered like the first time: the script answers a re-send with its first answer (the harness's contract)")
	case resend != "error" && resend != sold && resend != again:
		g.add(DuplicateRequest, resend, "GUESS: what the re-sent request r1 answered (a refusal as a duplicate, not its first answer)")
	}
	g.otherwise = string(Error)
}
