package reports

import (
	"encoding/json"
	"fmt"
	"sort"
)

// The pipeline section of report.html: the final stage's throughput
// (report.json pipeline.order_db: server, schema, throughput) and the
// reconciliation (pipeline.reconciliation: passes, during_load, final).
// It reads the names report.json already has:
//
//	pipeline.order_db.throughput  transactions, tx_p50_ms, tx_p99_ms, tx_max_ms (one order message's
//	                              transaction, begin → commit or rollback), stock_row_update_p50_ms,
//	                              stock_row_update_p99_ms (the conditional UPDATE of the one stock row:
//	                              its lock wait is the hot row's contention), orders_created, orders_per_s
//	                              (created orders per second between the first and the last),
//	                              creating_window_s
//	pipeline.reconciliation.final counts (divergences per class), divergences (class, reservation_id,
//	                              order_id, redis_status, detail, repaired), reservations_compared,
//	                              orders, repaired, stock
//
// The section is absent when the run had no pipeline.

type pipelineView struct {
	Server, Schema string
	Throughput     *OrderThroughput
	Recon          *reconView
}

// OrderThroughput is report.json's pipeline.order_db.throughput: the final
// stage's speed — order transactions and their latency, the stock row's
// UPDATE (its lock wait is the hot row's contention), and created orders per
// second between the first and the last (sut/pipeline fills it).
type OrderThroughput struct {
	Transactions   int64   `json:"transactions"`
	TxP50Ms        float64 `json:"tx_p50_ms"`
	TxP99Ms        float64 `json:"tx_p99_ms"`
	TxMaxMs        float64 `json:"tx_max_ms"`
	StockRowP50Ms  float64 `json:"stock_row_update_p50_ms"`
	StockRowP99Ms  float64 `json:"stock_row_update_p99_ms"`
	OrdersCreated  int64   `json:"orders_created"`
	OrdersPerSec   float64 `json:"orders_per_s"`
	CreatingWindow float64 `json:"creating_window_s"`
}

type reconView struct {
	Passes      int
	Err         string
	Final       bool
	Compared    int
	Orders      int64
	Repaired    int
	Classes     []reconClassView
	Stock       []kvView
	DuringLoad  string
	Divergences int
}

type reconClassView struct {
	Class  string
	Final  int
	During int
	Items  []reconItemView
}

type reconItemView struct {
	RID, OrderID, RedisStatus, Detail string
	Repaired                          bool
}

// pipelineDoc is the part of report.json's pipeline map the section shows.
type pipelineDoc struct {
	OrderDB *struct {
		Server     string           `json:"server"`
		Schema     string           `json:"schema"`
		Throughput *OrderThroughput `json:"throughput"`
	} `json:"order_db"`
	Recon *reconDoc `json:"reconciliation"`
}

// reconDoc is the pipeline map's reconciliation entry.
type reconDoc struct {
	Passes     int            `json:"passes"`
	DuringLoad map[string]int `json:"during_load"`
	Err        string         `json:"error"`
	Final      *struct {
		Reservations int              `json:"reservations_compared"`
		Orders       int64            `json:"orders"`
		Counts       map[string]int   `json:"counts"`
		Repaired     int              `json:"repaired"`
		Stock        map[string]int64 `json:"stock"`
		Divergences  []struct {
			Class       string `json:"class"`
			RID         string `json:"reservation_id"`
			OrderID     string `json:"order_id"`
			RedisStatus string `json:"redis_status"`
			Detail      string `json:"detail"`
			Repaired    bool   `json:"repaired"`
		} `json:"divergences"`
	} `json:"final"`
}

// pipelineHTML builds the section from report.json's pipeline map (nil
// without one).
func pipelineHTML(p map[string]any) *pipelineView {
	if p == nil {
		return nil
	}
	var doc pipelineDoc
	raw, err := json.Marshal(p)
	if err != nil || json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	v := &pipelineView{}
	if db := doc.OrderDB; db != nil {
		v.Server, v.Schema, v.Throughput = db.Server, db.Schema, db.Throughput
	}
	if rc := doc.Recon; rc != nil {
		v.Recon = reconViewOf(rc)
	}
	if v.Throughput == nil && v.Recon == nil {
		return nil
	}
	return v
}

// reconViewOf builds the reconciliation view: the pass count, error and
// during-load counts, the final comparison's figures and stock (by key)
// when there was one, and one row per divergence class (sorted by name)
// with its during-load and final counts and its items sorted by
// reservation id.
func reconViewOf(rc *reconDoc) *reconView {
	rv := &reconView{Passes: rc.Passes, Err: rc.Err, DuringLoad: fmt.Sprint(rc.DuringLoad)}
	classes := map[string]*reconClassView{}
	class := func(name string) *reconClassView {
		if classes[name] == nil {
			classes[name] = &reconClassView{Class: name}
		}
		return classes[name]
	}
	for c, n := range rc.DuringLoad {
		class(c).During = n
	}
	if f := rc.Final; f != nil {
		rv.Final, rv.Compared, rv.Orders, rv.Repaired, rv.Divergences = true, f.Reservations, f.Orders, f.Repaired, len(f.Divergences)
		for c, n := range f.Counts {
			class(c).Final = n
		}
		for _, d := range f.Divergences {
			cv := class(d.Class)
			cv.Items = append(cv.Items, reconItemView{RID: d.RID, OrderID: d.OrderID, RedisStatus: d.RedisStatus, Detail: d.Detail, Repaired: d.Repaired})
		}
		keys := make([]string, 0, len(f.Stock))
		for k := range f.Stock {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			rv.Stock = append(rv.Stock, kvView{Key: k, Value: fmt.Sprint(f.Stock[k])})
		}
	}
	for _, c := range classes {
		sort.Slice(c.Items, func(i, j int) bool { return c.Items[i].RID < c.Items[j].RID })
		rv.Classes = append(rv.Classes, *c)
	}
	sort.Slice(rv.Classes, func(i, j int) bool { return rv.Classes[i].Class < rv.Classes[j].Class })
	return rv
}
