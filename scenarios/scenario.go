package scenarios

import (
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

// AllAlgorithms is the algorithms entry that stands for every built-in algorithm.
const AllAlgorithms = "all"

// Defaults for fields a scenario file leaves out. Default returns a Scenario holding them.
const (
	DefaultDuration      = 10 * time.Second
	DefaultSeed          = 1
	DefaultClients       = 4
	DefaultPipelineDepth = 16
	DefaultZipfS         = 0.99
	DefaultHotShare      = 0.5
	DefaultLimit         = 100
	DefaultWindow        = time.Second
)

// MaxAlign is the longest period arrival.align may name: the run waits up to one period before
// it starts. The bounds of the load itself (duration, rates, clients, pipeline depth, keys,
// cost) are package load's (load.MaxRate and the others), checked with its Check functions.
const MaxAlign = time.Hour

// Scenario is one scenario file: what to run, on what, and what must hold. The doc comment of the
// package describes every field, its YAML spelling and its default. A Scenario built in Go should
// start from Default and be checked with Validate; Load and Parse return validated scenarios.
type Scenario struct {
	// Version of the format; only 1 exists.
	Version int
	// Name identifies the scenario in reports and result folders; default: the file name without
	// its extension.
	Name        string
	Description string
	// Topologies to run on, each with its own environment; default [single].
	Topologies []redisenv.Topology
	// Duration of the measured, verified part of each run; default 10s, or the sum of
	// Arrival.Steps when the file gives steps and no duration.
	Duration time.Duration
	// Warmup runs before Duration with the same load; it is measured but neither verified nor
	// reported. Default 0.
	Warmup time.Duration
	// Seed makes the key sequence and arrival jitter repeatable; default 1.
	Seed int64
	// Clients is the number of concurrent workers (each with its own client id); default 4.
	Clients    int
	ClientMode load.Mode // default plain
	// PipelineDepth is the number of requests per pipeline; only with ClientMode pipeline, where it
	// defaults to 16.
	PipelineDepth int
	// Call is how built-in algorithms' scripts are called: evalsha (default) or fcall (each
	// script as a Redis Function; see algorithms.WithFunctions). Custom scripts are not affected.
	Call algorithms.CallMode
	// Arrival is the open-loop schedule; nil means a closed loop (each client sends its next request
	// when the previous one returns).
	Arrival *arrival.Arrival
	// Keys says which subjects requests are for: count (default 1), distribution (uniform,
	// zipf with zipf_s > 0, default 0.99, or hot with hot_share in (0, 1], default 0.5).
	Keys load.Keys
	// Limit is what every built-in algorithm is configured with; default limit 100 per 1s window,
	// burst = limit, consumer_limit = limit.
	Limit algorithms.Limit
	// Cost is the number of permits every request asks for; default 1.
	Cost int64
	// ClockSkew offsets the clients' clocks: a list cycled over clients, or a spread.
	ClockSkew load.Skew
	// Algorithms to run, in order; default [all]. See ResolveAlgorithms.
	Algorithms []AlgorithmEntry
	Expect     result.Expect
	Thresholds []Threshold
	// SpeedOnly says that the scenario measures speed only and does not set out to press its
	// contract (speed_only; default false): an entry that never pressed it keeps its verdict and
	// says the contract was not exercised, where any other scenario's is inconclusive
	// (verify.Measurement.SpeedOnly).
	SpeedOnly bool
	// Persistence is what the servers limitbench starts keep on disk, which decides what a
	// restart loses; default none.
	Persistence redisenv.Persistence
	// Replicas is how many replicas each master has when limitbench starts a cluster or a
	// Sentinel group (0 to 5; default 0: the --replicas flag decides, and a Sentinel group gets
	// 1); a --replicas flag other than 0 overrides it. Single topologies and an external Redis
	// ignore it. A failover or a fault on the replication link needs a replica.
	Replicas int
	// Faults is the fault schedule of every measurement, in the file's order (see Fault).
	Faults []Fault
	// Wait follows every request with WAIT Wait.Replicas Wait.Timeout, pipelined with it on its
	// connection (wait_replicas, wait_timeout; see load.Plan.Wait); default none (Replicas 0),
	// and wait_timeout 100ms (algorithms.DefaultWaitTimeout). wait_short: deny sets
	// Wait.DenyShort (an admission whose WAIT came back short is taken as a denial); the default,
	// admit, leaves it false.
	Wait algorithms.Wait

	// File is the path the scenario was read from; empty when built in Go. Custom scripts are
	// relative to its directory.
	File string

	// pos maps field paths to where they are in File.
	pos map[string]position
	// flags maps field paths to the command-line flag that last set them (see Apply).
	flags map[string]string
	// waitShort is wait_short as the file wrote it ("" when it did not), for validation.
	waitShort string
}

// The values of wait_short.
const (
	WaitShortAdmit = "admit"
	WaitShortDeny  = "deny"
)

// AlgorithmEntry is one entry of the algorithms list: a built-in algorithm by name, "all", or a
// custom script.
type AlgorithmEntry struct {
	// Name of a built-in algorithm, AllAlgorithms, or the custom entry's name.
	Name string
	// Custom is the user's script; nil for built-in algorithms.
	Custom *algorithms.CustomSpec
}

// Default returns a scenario with every default of the format filled in, and no arrival (closed
// loop). Name is empty and must be set.
func Default() *Scenario {
	return &Scenario{
		Version:     1,
		Topologies:  []redisenv.Topology{redisenv.TopologySingle},
		Duration:    DefaultDuration,
		Seed:        DefaultSeed,
		Clients:     DefaultClients,
		ClientMode:  load.ModePlain,
		Call:        algorithms.CallEvalSha,
		Keys:        load.Keys{Count: 1, Distribution: load.Uniform},
		Limit:       algorithms.Limit{Limit: DefaultLimit, Window: DefaultWindow},
		Cost:        1,
		Algorithms:  []AlgorithmEntry{{Name: AllAlgorithms}},
		Persistence: redisenv.PersistenceNone,
	}
}

// ClosedLoop reports whether the scenario has no arrival schedule.
func (s *Scenario) ClosedLoop() bool { return s.Arrival == nil }

// ResolveAlgorithms returns the entries to run, in order, with "all" expanded into every built-in
// algorithm registered now (algorithms.Names, sorted) and duplicates removed. Call it at run time:
// the registry is filled by package initialisation.
func (s *Scenario) ResolveAlgorithms() []AlgorithmEntry {
	return s.resolve(algorithms.Names())
}

func (s *Scenario) resolve(builtins []string) []AlgorithmEntry {
	var out []AlgorithmEntry
	seen := map[string]bool{}
	add := func(e AlgorithmEntry) {
		if !seen[e.Name] {
			seen[e.Name] = true
			out = append(out, e)
		}
	}
	for _, e := range s.Algorithms {
		if e.Custom == nil && e.Name == AllAlgorithms {
			for _, n := range builtins {
				add(AlgorithmEntry{Name: n})
			}
			continue
		}
		add(e)
	}
	return out
}

// names returns the names ResolveAlgorithms would give with builtins registered.
func (s *Scenario) names(builtins []string) []string {
	entries := s.resolve(builtins)
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name
	}
	return out
}

// TotalDuration is Warmup + Duration: the length of one run's arrival schedule.
func (s *Scenario) TotalDuration() time.Duration { return s.Warmup + s.Duration }

// Plan returns the load of one run of s: its arrival (closed loop without one), duration, warmup,
// clients, client mode, keys, seed, skew and cost, and the timeline's bin (load.BinFor the
// duration). With a trace, the plan replays it (keys, seed, skew and cost are the trace's, and
// clients is the number of workers). The caller adds what is not the scenario's: progress, hooks.
func (s *Scenario) Plan() load.Plan {
	p := load.Plan{
		Arrival:       load.ClosedLoop{},
		Duration:      s.Duration,
		Warmup:        s.Warmup,
		Clients:       s.Clients,
		Mode:          s.ClientMode,
		PipelineDepth: s.PipelineDepth,
		Keys:          s.Keys,
		Seed:          uint64(s.Seed),
		Bin:           load.BinFor(s.Duration),
		Skew:          s.ClockSkew,
		Cost:          s.Cost,
		Wait:          s.Wait,
	}
	if s.Arrival != nil && s.Arrival.Trace != nil {
		// The trace names every row's subject, client, clock offset and cost.
		p.Arrival = load.Replay(s.Arrival.Trace)
		p.Keys, p.Seed, p.Skew, p.Cost = load.Keys{}, 0, load.Skew{}, 0
	} else if s.Arrival != nil {
		p.Arrival = load.NewProfile(s.Arrival.Pieces(s.TotalDuration())...)
	}
	return p
}
