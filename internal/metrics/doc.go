// Package metrics exports a run's live figures while it runs: Prometheus exposition at /metrics
// (--metrics-addr), Prometheus remote write 1.0 (--prometheus-remote-write, package remotewrite)
// and OTLP over HTTP (--otlp-endpoint, package otlp), the same series to each.
//
// # Shape
//
// One Exporter per run holds one Prometheus registry (never the global default one) and the
// outputs the flags ask for. Each measurement feeds it through a Stage (a measure.Stage: its
// Observe sees every outcome), never through a branch inside measure.Do. The hot path is
// Observe: it adds to counters and histogram buckets of one of a few shards (chosen by the
// outcome's logical client), with atomic adds and no lock; the shards are summed only when the
// registry is gathered (a scrape, a push).
//
// An Output is k6's small interface: Start, AddSamples (one gathering of the registry), Stop.
// The exposition server ignores AddSamples (Prometheus pulls); remote write and OTLP push every
// PushEvery and once more at Stop, so that the last samples of a short run are never lost to
// a scrape interval.
//
// # Series
//
// Every series carries the labels run_id, scenario, algorithm, topology and segment (empty
// outside a segmented run). Counters count the measured part only, as result.json does (the
// warmup's requests are limitbench_warmup_requests_total); repeats of one algorithm add to the
// same series. See docs/live-metrics.md for the table.
//
// # Correctness series and their limits
//
// limitbench_window_admitted_permits is the harness's own view: the most permits admitted to one
// subject within the current window of the contract's first limit, on a grid of that window's
// width aligned to Unix time on the harness's clock (the server's clock and the requests' latency
// are not taken into account). It is shown beside limitbench_window_allowance_permits to watch a
// limiter work; it is not a verdict. Only per-subject contracts with a window (or a bucket's
// refill period) have it. Definite and possible violations are the verifier's, counted when each
// measurement ends (limitbench_violations_definite_total, a counter). While a measurement
// verified as it runs is under way, limitbench_violations_definite_live (a gauge) is what its
// streaming verifier has found so far (verify.StreamLog.DefiniteSoFar), over the history taken as
// one: a loss of the limiter's state that the measurement's end sees may attribute some of them to
// the loss, so the counter, not the gauge, is the verdict. A measurement that keeps its whole
// history instead of streaming it (--whole-history) has no live gauge.
package metrics
