package httpsut

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"seckill-harness/lua"
)

// StockRead names the Redis reads that give a bucket's stock of a service
// that keeps its own keys (not state: reference) on the harness's
// cluster: each a Redis command line whose reply is an integer (or its
// text), e.g. [HGET, "stock:{${activity}}:${bucket}", available]. A
// command may name ${activity}, ${sku}, ${version} and ${bucket} (the
// harness's bucket: a service with one counter runs with buckets: 1).
type StockRead struct {
	// Available reads a bucket's available units (sut.Available: I1 and
	// I9 are judged).
	Available []string `yaml:"available"`
	// Held, optional, reads a bucket's held (reserved, not released)
	// units: with it the stock is whole (sut.Stock: I1 compares
	// available + held with the initial stock).
	Held []string `yaml:"held"`
}

// stockValues are the values a stock read may name.
var stockValues = []string{"activity", "sku", "version", "bucket"}

// mergeStock checks the file's stock: reads and keeps them.
func (m *Mapping) mergeStock(f *Mapping) error {
	if f.Stock == nil {
		if f.given("stock") {
			return f.errAt("stock", "empty: give available: with the Redis read of a bucket's available units, e.g. [HGET, \"stock:{${activity}}:${bucket}\", available], or remove stock:")
		}
		return nil
	}
	if m.ReferenceState() {
		return f.errAt("stock", "state: reference already reads the stock from the reference contract's keys: remove stock:, or say state: none")
	}
	if len(f.Stock.Available) == 0 {
		return f.errAt("stock", "stock.available: missing: give the Redis read of a bucket's available units, e.g. [HGET, \"stock:{${activity}}:${bucket}\", available]")
	}
	for _, r := range []struct {
		name string
		cmd  []string
	}{{"available", f.Stock.Available}, {"held", f.Stock.Held}} {
		for _, w := range r.cmd {
			if err := checkStockRefs(w); err != nil {
				return f.errAt("stock."+r.name, "%v", err)
			}
		}
	}
	if f.given("stock.held") && len(f.Stock.Held) == 0 {
		return f.errAt("stock.held", "empty: give the Redis read of a bucket's held units, or remove held:")
	}
	m.Stock = f.Stock
	return nil
}

// renderStock is cmd with bucket b of a's values.
func renderStock(cmd []string, a *lua.Activity, b uint32) []any {
	r := strings.NewReplacer("${activity}", a.ID, "${sku}", a.SKU, "${version}", strconv.FormatInt(a.Version, 10),
		"${bucket}", strconv.FormatUint(uint64(b), 10))
	out := make([]any, len(cmd))
	for i, w := range cmd {
		out[i] = r.Replace(w)
	}
	return out
}

// readStock runs the mapping's stock reads of bucket b on rdb (in one
// MULTI/EXEC: one moment when their keys share a slot): initial is the
// bucket's planned stock, held 0 without stock.held.
func (m *Mapping) readStock(ctx context.Context, rdb redis.UniversalClient, a *lua.Activity, b uint32) (lua.Stock, error) {
	reads := [][]string{m.Stock.Available}
	names := []string{"available"}
	if len(m.Stock.Held) > 0 {
		reads, names = append(reads, m.Stock.Held), append(names, "held")
	}
	got := make([]*redis.Cmd, len(reads))
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range reads {
			got[i] = p.Do(ctx, renderStock(r, a, b)...)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return lua.Stock{}, fmt.Errorf("service %s: read stock.%s of bucket %d: %w", m.Name, strings.Join(names, " and stock."), b, err)
	}
	var n [2]int64
	for i, c := range got {
		v, err := c.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return lua.Stock{}, fmt.Errorf("service %s: stock.%s of bucket %d: %w", m.Name, names[i], b, err)
		}
		switch x := v.(type) {
		case int64:
			n[i] = x
		case string:
			if n[i], err = strconv.ParseInt(x, 10, 64); err != nil {
				return lua.Stock{}, fmt.Errorf("service %s: stock.%s of bucket %d: %q is not an integer", m.Name, names[i], b, x)
			}
		default:
			return lua.Stock{}, fmt.Errorf("service %s: stock.%s of bucket %d: %v is not an integer (no such key or field?)", m.Name, names[i], b, v)
		}
	}
	return lua.Stock{Initial: a.BucketStock(b), Available: n[0], Reserved: n[1]}, nil
}

// checkStockRefs refuses a ${name} in word w that a stock read cannot name.
func checkStockRefs(w string) error {
	_, err := templateRefs(w, "bucket", "a stock read", stockValues, "")
	return err
}
