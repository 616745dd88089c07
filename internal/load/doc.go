// Package load drives one rate limiter with one load and measures it. It owns the pacers (a
// trace's replay among them), the workers, the client modes, the choice of keys and clients,
// clock skew, each request's Outcome, and the aggregators that turn outcomes into figures. It
// leaves to packages of their own what it uses but does not own: the trace and its files (trace),
// its own Redis client for the measured requests (wire) and the server's clock offset (clock).
//
// The pacer decides when: a Pacer is a pure function that gives the intended send time of hit n
// (At) and, vegeta style, how long to wait before the next hit (Pace). Pacing is global: the rate
// is the total across all workers, never per worker. The workers decide how: plain (one request
// per round trip), pipeline (up to depth requests per round trip) or autopipeline (go-redis
// AutoPipeline batches concurrent callers). Every request carries its intended send time, so
// latency is measured from when the request should have been sent (coordinated omission
// corrected) and, separately, service time from when it was actually sent. Workers wait for a
// tick with a Go timer, which the runtime fires with millisecond resolution when it is idle; an
// open-loop run therefore has a timekeeper goroutine that wakes the scheduler at each tick with a
// timerfd, so the generator's own lateness stays well under the latencies it measures (see
// keeper.go; Plan.NoKeeper turns it off, and bench/ reports the lateness with and without).
//
// A worker keeps one algorithms.Call per request it may have in flight (PipelineDepth of them) and
// sends every request through them, so that its requests reuse their commands instead of building
// new ones; the connections the workers hold are opened before the clock starts. In plain and
// pipeline mode against one server (not Sentinel's failover client), each worker sends on a wire
// connection of its own (package wire: limitbench writes the Calls' commands and reads their
// replies itself, into the values go-redis would give), because go-redis's request path alone
// cost more generator CPU per request than redis-benchmark. go-redis still prepares the limiters,
// loads scripts again after NOSCRIPT, routes clusters, follows Sentinel and serves autopipeline
// mode and the harness's own checks. This departs from DESIGN.md, where go-redis sends every
// request; the reasons are in package wire's doc and the figures in the README.
//
// A trace (package trace: an explicit schedule of rows, read from a file) is replayed as a load
// by its pacer, TracePacer (Replay): each row is sent at its own offset, as its own client, for
// its own subject and cost. Reading and writing trace files is package trace's, not load's.
//
// Each request produces one Outcome, a plain struct. Aggregators consume outcomes (Aggregator:
// Add, Merge, Fresh, Finish): this package's Histograms (HDR, latency and service time, allowed
// and denied apart) and Timeline (per-bin counts), and the verifier's admission log
// (verify.AdmissionLog, the compact history it checks). Run takes the aggregators it feeds
// (Sinks), gives each worker shard a fresh set and merges them at the end; load knows nothing of
// what an aggregator keeps. Every aggregator encodes itself (Encoder, Decoder: a versioned frame)
// so that the aggregators of separate generators can be merged. Load's aggregators give a result
// entry its latency summaries (Latency, Summarize) and timeline counts (Series). Measuring an
// external server's clock against the harness's, for the admission log, is package clock's.
//
// The concepts a scenario states about its load are load's types, decoded from YAML by package
// scenarios and written into result.json as they are: Keys, Skew, Mode and the arrival's Piece.
// A segment of a segmented run is not load's: a Plan asks its Share which ticks are its own.
// Nothing is dropped silently: values clamped into a histogram, warmup outcomes kept out of the
// figures, and ticks the generator could not send in time are all counted in Counts.
//
// Falling behind: a tick is late when it is sent more than Plan.LateAfter (default 100 ms)
// after its intended time, and missed when it was due in the measured part but never sent (the
// generator could not catch up before the end: after the end, a tick is sent only while it is
// not yet late, so a run overruns its end by at most LateAfter and a tick is missed only where
// it would otherwise have been late). A run is behind schedule when late + missed
// ticks exceed 1 % of the scheduled ones; its verdict is then inconclusive. Latency from the
// intended time shows smaller delays in full.
//
// Run is the entry point: one limiter under one Plan against one Redis. Run never installs signal
// handlers or exits; cancel its context to stop it (what was measured so far stays valid).
package load
