// Package httpsut puts a running access service under test over HTTP: a
// sut.System whose reserve is one request to the service's submit
// endpoint, spoken through a small JSON mapping (Mapping, LoadMapping:
// the HTTP contract of docs/SERVICE.md by default). The harness's engine
// paces the load and times every operation from its intended start, so
// the latency stays free of coordinated omission; each HTTP request is
// also a vegeta.Result, accumulated in vegeta.Metrics for the report's
// service section. The mapping's setup: and teardown: calls create and
// remove the run's sale through the service's own API (setup.go).
package httpsut
