// Package history is the operation history: what each client was told.
//
// One Op per operation the load sent (its kind, user, request, intended
// and actual start, answer, outcome and how it got there), kept compact so
// a run of a million operations fits in memory, or streamed to a spool on
// disk (Store.SpoolTo). The engine (package runner) writes it through a
// Store; the checks, the reports, verify and explore read it (History.All,
// ReadJSONL). The stock sampler's readings (StockSample) and the error
// classes an ERROR answer is filed under (ErrClass, Classify) are here too,
// so a reader of the history needs nothing of the engine.
//
// Not to be confused with the results history (package reports/results):
// one record per run, across nights.
package history
