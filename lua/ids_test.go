package lua

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"testing"
)

func TestRequestShardIsFNV32aMod256(t *testing.T) {
	for _, id := range []string{"r1", "req-000001", "x", strings.Repeat("z", 128)} {
		h := fnv.New32a()
		h.Write([]byte(id))
		want := h.Sum32() % 256
		if got := RequestShard(id); got != want {
			t.Fatalf("RequestShard(%q)=%d want %d", id, got, want)
		}
		sc := Scope{ActivityID: "a", SKUID: "s", Version: 7, Bucket: 0}
		if k := sc.ReqShardKey(id); k != fmt.Sprintf("seckill:{a:a:s:s:v:7:b:0}:req:%03d", want) {
			t.Fatalf("ReqShardKey=%s", k)
		}
	}
}

func TestHashTagAndKeys(t *testing.T) {
	sc := Scope{ActivityID: "10001", SKUID: "88001", Version: 7, Bucket: 0}
	if got := sc.StockKey(); got != "seckill:{a:10001:s:88001:v:7:b:0}:stock" {
		t.Fatalf("stock key %s", got)
	}
	if got := sc.UserKey("u1"); got != "seckill:{a:10001:s:88001:v:7:b:0}:user:u1" {
		t.Fatalf("user key %s", got)
	}
}

func TestBucketSplitGivesRemainderToFirstBuckets(t *testing.T) {
	a := &Activity{Stock: 10, Buckets: 4}
	want := []int64{3, 3, 2, 2}
	var sum int64
	for b := uint32(0); b < 4; b++ {
		if got := a.BucketStock(b); got != want[b] {
			t.Fatalf("bucket %d: %d want %d", b, got, want[b])
		}
		sum += a.BucketStock(b)
	}
	if sum != 10 {
		t.Fatalf("split sums to %d", sum)
	}
}

func TestBucketForIsStableAndSpreads(t *testing.T) {
	counts := make([]int, 16)
	for i := 0; i < 16000; i++ {
		u := fmt.Sprintf("u%d", i)
		b := BucketFor("act", "sku", u, 16)
		if b != BucketFor("act", "sku", u, 16) {
			t.Fatal("bucket not stable")
		}
		counts[b]++
	}
	for b, n := range counts {
		if n < 800 || n > 1200 {
			t.Fatalf("bucket %d got %d of 16000 users: routing is skewed", b, n)
		}
	}
	if BucketFor("a", "s", "u", 1) != 0 || BucketFor("a", "s", "u", 0) != 0 {
		t.Fatal("one bucket must route to 0")
	}
}

func TestReservationIDShapeAndDeterminism(t *testing.T) {
	re := regexp.MustCompile(`^[a-z2-7]{26}$`)
	a := ReservationID([]byte("k"), "act", "sku", "u1", "r1")
	if !re.MatchString(a) {
		t.Fatalf("reservation id %q is not 26 lower-case base32 chars", a)
	}
	if a != ReservationID([]byte("k"), "act", "sku", "u1", "r1") {
		t.Fatal("not deterministic")
	}
	for _, other := range []string{
		ReservationID([]byte("k2"), "act", "sku", "u1", "r1"),
		ReservationID([]byte("k"), "act", "sku", "u1", "r2"),
		ReservationID([]byte("k"), "act", "sku", "u2", "r1"),
		// the \0 separator keeps ("ab","c") and ("a","bc") apart
		ReservationID([]byte("k"), "ac", "tsku", "u1", "r1"),
	} {
		if other == a {
			t.Fatal("different input gave the same reservation id")
		}
	}
	if MessageID(a) != "reserve-order:"+a+":v1" {
		t.Fatal("message id")
	}
}

func TestValidateID(t *testing.T) {
	for _, ok := range []string{"a", "A-z_09", strings.Repeat("x", 128)} {
		if err := ValidateID("user_id", ok); err != nil {
			t.Fatalf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 129), "a|b", "a{b", "a}b", "a b", "é", "a:b"} {
		err := ValidateID("user_id", bad)
		if err == nil || !strings.Contains(err.Error(), "user_id") {
			t.Fatalf("%q: want an error naming user_id, got %v", bad, err)
		}
	}
}

func TestActivityValidate(t *testing.T) {
	good := NewActivity("a1", "s1", 10, 4, 60e9)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(a *Activity){
		"version":       func(a *Activity) { a.Version = 0 },
		"bucket":        func(a *Activity) { a.Buckets = 0 },
		"buckets":       func(a *Activity) { a.Stock = 3 },
		"negative":      func(a *Activity) { a.Stock = -1 },
		"state":         func(a *Activity) { a.State = "OPEN" },
		"before":        func(a *Activity) { a.EndsAtMs = a.StartsAtMs - 1 },
		"retention":     func(a *Activity) { a.RetentionUntilMs = a.EndsAtMs },
		"[A-Za-z0-9_-]": func(a *Activity) { a.ID = "a|b" },
	}
	for want, mut := range cases {
		a := *good
		mut(&a)
		if err := a.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: got %v", want, err)
		}
	}
}

func TestParseRequestResult(t *testing.T) {
	r, err := ParseRequestResult("0|abc|9|QUEUED|u1")
	if err != nil || r.Code != Accepted || r.ReservationID != "abc" || r.Remaining != 9 || r.UserID != "u1" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"", "0|a|1|Q", "x|a|1|Q|u", "0|a|y|Q|u"} {
		if _, err := ParseRequestResult(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestScriptsLoadDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "reserve.lua") {
		t.Fatalf("empty dir: %v", err)
	}
	emb := Embedded()
	for _, s := range []*Script{emb.Reserve, emb.Transition, emb.Compensate} {
		writeFile(t, dir+"/"+s.Name, s.Source)
	}
	got, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reserve.SHA1 != emb.Reserve.SHA1 || got.Origin == "embedded" {
		t.Fatalf("loaded %+v", got)
	}
	if _, err := LoadDir(dir + "/reserve.lua"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file as dir: %v", err)
	}
}

// The optimised derivation must equal the specification's, byte for byte.
func TestReservationIDMatchesTheSpecification(t *testing.T) {
	spec := func(secret []byte, a, s, u, r string) string {
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(a + "\x00" + s + "\x00" + u + "\x00" + r))
		return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(mac.Sum(nil))[:26])
	}
	st := NewStore(nil, nil, []byte("sekret"))
	a := &Activity{ID: "act", SKU: "sku"}
	for i := 0; i < 200; i++ {
		u, r := fmt.Sprintf("user-%d", i), strings.Repeat("r", i%130)+fmt.Sprint(i)
		want := spec([]byte("sekret"), "act", "sku", u, r)
		if got := ReservationID([]byte("sekret"), "act", "sku", u, r); got != want {
			t.Fatalf("ReservationID %s want %s", got, want)
		}
		if got := st.ReservationIDFor(a, u, r); got != want {
			t.Fatalf("Store.ReservationIDFor %s want %s", got, want)
		}
	}
}

// BucketFor is fnv64a(activity\0sku\0user) % buckets exactly as hash/fnv
// computes it (the routing every generator and the checker share).
func TestBucketForIsFNV64a(t *testing.T) {
	for i := 0; i < 5000; i++ {
		a, s, u := fmt.Sprintf("act%d", i%7), fmt.Sprintf("sku%d", i%3), fmt.Sprintf("u%d", i)
		h := fnv.New64a()
		h.Write([]byte(a + "\x00" + s + "\x00" + u))
		for _, n := range []uint32{2, 3, 16, 1000} {
			if got, want := BucketFor(a, s, u, n), uint32(h.Sum64()%uint64(n)); got != want {
				t.Fatalf("BucketFor(%s,%s,%s,%d) = %d, want %d", a, s, u, n, got, want)
			}
		}
	}
}

// The store's one-slice EVALSHA command of a reserve call holds exactly
// the contract's (ReserveCall.Keys and Args), as go-redis writes them
// (per-call values by pointer), the write probe standing for ARGV[1], and
// the first key a plain string (the slot go-redis routes by); its
// reservation and message ids are ReservationIDFor's and MessageID's.
func TestReserveKeysArgsAreTheContracts(t *testing.T) {
	st := NewStore(nil, Embedded(), []byte("k"))
	for _, b := range []uint32{1, 3} {
		a := NewActivity("keys", "sku1", 10, b, 0)
		for i := 0; i < 20; i++ {
			uid := fmt.Sprintf("u%d", i)
			if i%4 == 0 { // keys longer than the wire's own buffer
				uid = fmt.Sprintf("%0*d", MaxIDLen, i)
			}
			call, err := st.NewReserveCall(a, uid, fmt.Sprintf("r%d", i), 90_000_000_000)
			if err != nil {
				t.Fatal(err)
			}
			if rid := st.ReservationIDFor(a, uid, fmt.Sprintf("r%d", i)); call.ReservationID != rid || call.MessageID != MessageID(rid) {
				t.Fatalf("call ids %q %q, want %q %q", call.ReservationID, call.MessageID, rid, MessageID(rid))
			}
			argv := st.reserveArgv(call)
			if argv[2] != 8 {
				t.Fatalf("numkeys %v, want 8", argv[2])
			}
			if _, ok := argv[3].(string); !ok {
				t.Fatalf("KEYS[1] is %T: go-redis routes by the first key only when it is a string", argv[3])
			}
			// go-redis writes a *string or *int64 as the value it points to.
			for i, v := range argv {
				switch p := v.(type) {
				case *string:
					argv[i] = *p
				case *int64:
					argv[i] = *p
				}
			}
			keys, args := argv[3:11], argv[11:]
			if fmt.Sprint(keys) != fmt.Sprint(call.Keys()) {
				t.Fatalf("keys %v, want %v", keys, call.Keys())
			}
			want := call.Args()
			if p, ok := args[0].(*writeProbe); !ok || p.s != want[0] {
				t.Fatalf("ARGV[1] = %#v, want a probe of %q", args[0], want[0])
			}
			if fmt.Sprintf("%#v", args[1:]) != fmt.Sprintf("%#v", want[1:]) {
				t.Fatalf("args %#v, want %#v", args[1:], want[1:])
			}
		}
	}
}
