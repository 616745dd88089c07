// Package scenarios owns the scenario format: strict loading from YAML straight into the types that
// own each concept (load's Keys, Skew and Mode, redisenv's Topology, algorithms' Limit and
// CustomSpec; its own Arrival, Expect and Threshold), validation, command-line overrides, the load
// plan of a scenario (Plan), and the standard suite of scenario files beside this package
// (scenarios/*.yaml). This comment is the reference for the format.
//
// # Loading
//
// Load (or Parse) reads one file strictly: an unknown field (with a "did you mean"), a value of the
// wrong type, an impossible value, an unknown algorithm or a threshold that does not parse is an
// error. Every problem is reported at once, one per line as "file:line: field: message", in an
// *Errors that matches ErrInvalid with errors.Is. A scenario built in Go starts from Default and is
// checked with Validate; Apply changes a scenario as command-line flags say and validates it again.
//
// # Format
//
// A complete file, with each field's default in the comment (a field left out takes its default):
//
//	version: 1                  # default 1; the only version
//	name: hot-key-overload      # default: the file name without .yaml
//	description: One subject offered twice its limit by 64 clients.
//	topologies: [single, cluster]   # default [single]; single | cluster | sentinel, each on its own Redis
//	duration: 10s               # default 10s (or the sum of arrival.steps); measured and verified; >= 100ms
//	warmup: 1s                  # default 0; runs first, same load, measured but not verified or reported
//	seed: 1                     # default 1; same seed, same key sequence
//	clients: 64                 # default 4; concurrent workers, each with its own client id (1 to 10,000)
//	client_mode: plain          # default plain; plain | pipeline | autopipeline
//	pipeline_depth: 16          # only with client_mode: pipeline, where it defaults to 16 (1 to 10,000)
//	call: evalsha               # default evalsha; evalsha | fcall (built-in scripts as Redis Functions)
//	speed_only: false           # default false; true (every algorithm) or a list of names: measured for speed only, an entry that never pressed its contract keeps its verdict
//	arrival:                    # omit for a closed loop (each client sends when its last reply is in)
//	  rate: 2000                # requests per second, all clients together (at most 10,000,000)
//	keys:
//	  count: 1                  # default 1; number of subjects (1 to 16,777,216)
//	  distribution: uniform     # default uniform; uniform | zipf | hot
//	  zipf_s: 0.99              # only with zipf (> 0, larger is more skewed), default 0.99
//	  hot_share: 0.5            # only with hot: subject 0's share of requests (0 < x <= 1), default 0.5
//	limit:
//	  limit: 1000               # default 100; permits per window (> 0)
//	  window: 1s                # default 1s; > 0, whole milliseconds; also the token-bucket refill time
//	  burst: 1000               # default 0, meaning limit; token-bucket and GCRA capacity
//	  consumer_limit: 100       # default 0, meaning limit; per-consumer limit of resource-consumer
//	cost: 1                     # default 1; permits each request asks for (1 <= cost <= capacity, 65,535)
//	clock_skew: [0s, 2s, -2s]   # default none; see Clock skew
//	algorithms: [all]           # default [all]; see Algorithms
//	expect:
//	  violations: [token-bucket-published]   # must be flagged, or the scenario fails
//	  may_violate: [sliding-log-published]   # flagged or not, the scenario does not fail on them
//	thresholds:                 # each must hold, or the scenario fails; see Thresholds
//	  - "p99 < 5ms"
//	  - "gcra: efficiency > 0.95"
//	persistence: none           # default none; none | aof-everysec | aof-always (servers limitbench starts)
//	replicas: 1                 # default 0 (the --replicas flag decides); replicas per master in cluster and sentinel
//	faults:                     # default none; see Faults
//	  - {at: 2s, kind: restart, target: master}
//	wait_replicas: 1            # default 0 (none); follow every request with WAIT 1 (see Waiting for replicas)
//	wait_timeout: 100ms         # only with wait_replicas; default 100ms; whole ms, at most 2s
//	wait_short: admit           # only with wait_replicas; default admit; admit | deny (fail closed)
//
// Durations are Go durations: 500ms, 10s, 1m30s, 250us. Field names in messages are paths such as
// arrival.steps[1].rate, with 0-based list indexes.
//
// # Bounds
//
// The load a scenario describes has bounds, package load's (load.MaxRate and the others, checked
// by the same functions here, for the command-line overrides, and when a run starts), so that a
// value that could never run, or would exhaust the machine, is bad input naming its field:
//
//	duration                  at least 100ms (load.MinDuration): a shorter run measures too few
//	                          requests for its figures to mean anything
//	warmup + duration         at most 24h (load.MaxSpan)
//	every rate                a finite number (not .nan or .inf), at most 10,000,000 per second
//	                          (load.MaxRate), all clients together
//	clients                   1 to 10,000 (load.MaxClients, Redis's default maxclients)
//	pipeline_depth            1 to 10,000 (load.MaxPipelineDepth), and clients × pipeline_depth at
//	                          most 100,000 requests in flight (load.MaxInFlight)
//	keys.count                1 to 16,777,216 (load.MaxKeys)
//	cost                      1 to 65,535 (load.MaxCost)
//	arrival                   steps or spikes repeated over the run at most 1,000,000 pieces
//	                          (load.MaxPieces); every length at most 24h; align at most 1h
//	                          (MaxAlign: the run waits up to one period)
//	zipf_s, hot_share         finite numbers
//	thresholds                one that no measurement can keep ("p99 < 0ms", "max <= 0us",
//	                          "errors < 0") is refused
//
// # Arrival
//
// The arrival schedule is global: the rate is for all clients together, never per client. Its time
// starts with the warmup, so a schedule spans warmup + duration. Give exactly one of:
//
//	rate: 2000                                   # constant, > 0
//	ramp: {from: 100, to: 5000}                  # linear over warmup + duration; both >= 0, not both 0
//	steps: [{for: 5s, rate: 500}, {for: 5s, rate: 5000}]
//	                                             # in order, then again from the first (a short list
//	                                             # is a periodic load); for > 0, rate >= 0
//	spike: {base: 100, peak: 5000, at: 3s, for: 500ms}
//	                                             # base rate, peak during [at, at+for); with every: 1s
//	                                             # also during [at+k·every, at+k·every+for), k >= 1
//
//	trace: traffic.csv                           # replay a trace file, row by row (see Traces)
//
// and optionally align, which places the schedule's time zero on the Unix clock (the run waits for
// it, up to one period):
//
//	align: 1s                                    # time zero is a whole second
//	align: {every: 1m, offset: 55s}              # time zero is 55 s past a whole minute
//
// Aligned to the limit's window, schedule times are window phases. scenarios/boundary-burst.yaml
// uses align: 1s with spike {at: 1900ms, for: 200ms, every: 2s}: every burst straddles a whole
// second, which is where a 1s fixed window turns over.
//
// # Traces
//
// arrival.trace replays a file of requests exactly (open loop: each row is sent at its own
// offset, whatever happened to the rows before it): a production traffic log, or the reproducer
// `limitbench hunt` writes. The path is relative to the scenario file; the format is chosen by
// the extension, CSV (.csv) or JSON Lines (.jsonl, .ndjson):
//
//	offset,client,subject,cost,skew            # header: the columns, in any order; skew optional
//	0s,alice,user:1,1,                         # offset from the start of the run (warmup included)
//	1.5ms,bob,user:1,2,250ms                   # bob's clock is 250ms ahead (client-clock algorithms)
//
//	{"offset": "0s", "client": "alice", "subject": "user:1", "cost": 1}
//
// Offsets never decrease from one row to the next; client and subject are names (a subject is
// also the keys' hash tag), cost 1 to 65,535, skew one clock offset per client within ±24h. The
// trace names every request's subject, client, clock offset and cost, so keys, cost, clock_skew
// and seed cannot be given with it; clients is the number of workers that send the rows (rows
// are handed to whichever is free, in order; give at least as many as the trace has requests
// at one instant). duration defaults to just after the last row (warmup + duration must end
// after it). Every problem of the file is bad input naming the trace file, line, column and
// field. align places the trace's time zero on the clock as for any schedule.
//
// Without arrival the run is a closed loop: each client sends its next request (or, with
// client_mode pipeline, its next pipeline) as soon as the previous one is answered. It measures
// capacity, not latency under a given load.
//
// # Clock skew
//
// Offsets added to the time each client hands to client-clock algorithms (server-clock algorithms
// read Redis TIME and are unaffected). Two forms:
//
//	clock_skew: [0s, 2s, -2s]      # cycled over clients: client i gets the (i mod 3)th offset
//	clock_skew: {spread: 2s}       # spaced evenly over [-2s, +2s] across the clients
//
// # Algorithms
//
// A list of built-in algorithm names (limitbench list shows them), "all" for every built-in
// algorithm (expanded when the run starts, see ResolveAlgorithms), and custom scripts:
//
//	algorithms:
//	  - gcra
//	  - name: my-limiter                   # must not be a built-in name
//	    script: my_limiter.lua             # relative to the scenario file; read at load time
//	    keys: ["rl:{{tag}}:tokens", "rl:{{tag}}:ts"]   # KEYS templates, at least one
//	    args: ["{{rate}}", "{{burst}}", "{{now_s}}", "{{cost}}"]   # ARGV templates
//	    allowed: {element: 1, equals: 1}   # how to read the reply
//	    time: {element: 3, unit: ms}       # optional: where the reply holds the time it used
//	    contract: {kind: token-bucket, capacity: 5, rate: 1, per: 1s}
//
// In place of script:, library: my_lib.lua and function: allow name a Redis function library (its
// first line "#!lua name=my_lib") and the function each request calls with FCALL; the library is
// loaded with FUNCTION LOAD on every master and removed after each measurement. A library of that
// name already on the server is used as it is when its code is the same (and left there), and is
// an error when it differs: limitbench never replaces a library it did not load. script:
// and library: together, or one of library: and function: without the other, are errors.
//
// Templates (see algorithms.CustomTemplates): {{subject}}, {{tag}} (the subject in braces, a
// cluster hash tag), {{client}}, {{cost}}, {{limit}}, {{window_ms}}, {{window_s}} (rounded up),
// {{burst}}, {{rate}} (per second, e.g. 2.5), {{now_ms}}, {{now_s}}, {{now_us}}, {{now_s_float}}
// (the client's clock, skew included; now_s_float is seconds with six decimals, as time.time()
// gives), {{uuid}}, {{prefix}} (the run's key prefix; keys that do not start with it get it
// prepended). Any other name is an error. Inside the braces an integer expression over cost,
// limit, window_ms, window_s, burst, now_ms, now_s, now_us and whole numbers, with + - * / (floor
// division) and parentheses: "rl:{{tag}}:{{now_ms / window_ms}}" is this window's key and
// "rl:{{tag}}:{{now_ms / window_ms - 1}}" the previous one's. An expression that does not parse,
// or divides by zero or overflows with the scenario's numbers, is an error at load time naming
// file, line and field; one that fails on a request's own values (cost, now_*) fails that request,
// unsent. When topologies include cluster, every key must have the same hash tag (use {{tag}}). A
// key written "" stays the empty string (some libraries pass it for "no key"), never prefixed; it
// is refused when topologies include cluster (no slot can be computed for it).
//
// allowed: element is a 1-based index into an array reply (omit it for a scalar reply), and exactly
// one rule decides: equals: V, not_equals: V (the element's text, integers in decimal),
// greater_than: N, at_least: N, at_most: N, less_than: N (numbers: an integer or a string holding
// one), prefix: "S", or is_nil: true. V and N may be templates, expanded per request: a script
// that returns its count is read with at_most: "{{limit}}", one that charges cost with
// at_most: "{{limit - cost}}" or equals: "{{cost}}". A reply the rule cannot read is an unknown
// outcome, never an admission; its message names the rule, the element and the raw reply.
//
// time: element >= 1 of an array reply, unit us, ms or s: the Unix time the script decided at,
// an integer or a string in any notation Lua's tostring writes ("1700000000.1235",
// "1.7955344972883e+15"). The decision is placed in the interval the written digits allow (14
// significant digits of µs leave ±100 µs), never narrowed to a point the digits cannot vouch for.
// Without it the verifier places each decision in its [send, receive] interval.
//
// contract: kind sliding-window {limit, window}, fixed-window {limit, window} (windows aligned on
// the Unix epoch), first-hit-window {limit, window} (each window begins at the first request that
// reaches the script after the previous one ended: INCR with an expiry set on the first hit),
// token-bucket {capacity, rate, per} (rate permits every per), or none (benchmark only, no
// verdict); each parameter its kind takes is required and others are errors. The numbers may be
// templates of what is constant for a limit: limit: "{{limit}}", window: "{{window_ms}}ms",
// capacity: "{{burst}}"; a contract whose numbers differ from the scenario's limit is a note in the
// output, not an error. granularity: 1s (optional) states a clock resolution the script is known
// to have; it is printed with the contract everywhere ("fixed-window(20, 1s, granularity 1ms)").
//
// # Expectations
//
// expect.violations names algorithms the verifier must flag with a definite violation; the
// scenario fails if one is not flagged. Their failing verdicts are expected and do not fail the
// scenario; any other algorithm's failing verdict does, except those in expect.may_violate, whose
// verdict does not count either way (flaws that show only on some runs). Every name must be run by
// the scenario.
//
// # Thresholds
//
// Each threshold is "[algorithm:] metric op value" (see Threshold and ParseThreshold): metric p50,
// p90, p99, p999, max (latency from the intended send time, value with unit us, ms or s), throughput
// (requests per second), efficiency (admitted/ideal) or errors (share of requests, plain or
// percent); op <, <=, > or >=. Without an algorithm the bound applies to every algorithm and
// topology; with one, only to that algorithm.
//
// # Faults
//
// faults lists what to break during every measurement (see Fault): at (from the start of the
// measured part, required), kind (required: kill, restart, pause, failover, flush-scripts,
// client-kill, latency, reset, blackhole), target (master, master:N, replica, replica:N,
// masters, node:HOST:PORT; default master), duration (required for pause, latency, reset and
// blackhole, refused for the others; the fault must end within the measured part), recovery
// (default: limit.window), latency and jitter (latency only, whole milliseconds), drop
// (blackhole only), mode (failover only: default, force, takeover, kill; target masters fails
// every shard over at once, in mode takeover on a cluster) and link (latency, reset and
// blackhole only: client, the default, or replication). latency, reset and blackhole act on the
// network between the load generator and the targeted nodes (a proxy in front of each node), or
// with link: replication on the link from each targeted master (master, master:N or masters) to
// its replicas (a proxy the master is announced by, put in place before the load); on the client
// link they are the only kinds allowed on an external Redis (CheckEnvironment). replicas gives
// each master of a cluster or Sentinel group that many replicas (a --replicas flag wins).
//
// persistence decides what a restart loses: none keeps nothing, aof-everysec may lose the last
// second, aof-always nothing acknowledged.
//
// # Waiting for replicas
//
// wait_replicas: N follows every request with WAIT N wait_timeout, in the same round trip and on
// the same connection (algorithms.WaitCall; on a cluster, on the master of the request's key), so
// that an admission is on N replicas before its caller sees it. Each request's latency includes
// its WAIT: that is the price. What it buys shows under a failover: an admission a promoted
// replica has already seen is not lost with the old master. The result counts, per entry, the
// WAITs that came back with fewer than N replicas (wait.short: the timeout passed, or no answer);
// their admissions stand (WAIT undoes nothing), and they are the ones a failover can still lose.
// wait_timeout (default 100ms, algorithms.DefaultWaitTimeout; whole milliseconds, at most 2s, below
// the clients' read timeout) bounds how long a request is held while a replica is missing; WAIT's
// own 0 (forever) is refused. wait_short: deny makes the caller fail closed: an admission whose
// WAIT came back short is recorded as a denial (its permit stays spent on the server); the
// default, admit, takes the script's decision as WAIT alone does. Plain and pipeline mode (each request of a pipeline is followed by
// its own WAIT); autopipeline is refused, and so is pipeline mode on topology cluster. N may not
// exceed the replicas each master has (single: none; sentinel: --replicas, default 1; cluster:
// --replicas), checked before anything starts (CheckReplicas); on an external Redis, whose replicas
// limitbench cannot know, N is taken as written and an unsatisfiable WAIT shows as short ones.
// --wait-replicas overrides it (0: no WAIT), so one scenario runs with and without it.
//
// # Standard suite
//
// smoke, hot-key-overload, many-keys-zipf, cluster-spread, clock-skew, boundary-burst, saturation,
// demo, restart, slow-link, sentinel-failover, sentinel-failover-lag, failover, wait-replicas, and
// hunt-published (for `limitbench hunt`: the published variants a short run trips only by luck);
// each file's description says what it shows.
package scenarios
