package result

import (
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
)

// Result is one run: a scenario on one environment, with one Entry per algorithm × topology. It is
// what result.json holds. The zero value is not valid; set Schema to SchemaVersion (Write does it
// when empty).
type Result struct {
	// Schema is SchemaVersion.
	Schema string `json:"schema"`
	// Scenario says what was run.
	Scenario Scenario `json:"scenario"`
	// Environment says where it ran.
	Environment Environment `json:"environment"`
	// StartedAt and FinishedAt are wall-clock UTC times of the run as a whole.
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// CutShort is true when the run stopped before its planned end (Ctrl-C, lost Redis, deadline);
	// the figures cover what was measured so far. CutShortNote says why, in words.
	CutShort     bool   `json:"cut_short"`
	CutShortNote string `json:"cut_short_note,omitempty"`
	// Reference names the algorithm (usually a reference script) that Entry.Relative figures are
	// ratios against; empty when there is none.
	Reference string `json:"reference,omitempty"`
	// Entries holds one entry per algorithm × topology, in the order the runner ran them.
	Entries []Entry `json:"entries"`
	// Files lists the run-level files written beside result.json, by base name; WriteAll fills it.
	Files RunFiles `json:"files"`
	// Segment is set on one generator's part of a segmented run (see Segment).
	Segment *Segment `json:"segment,omitempty"`
	// Generators is set on a merged result: one row per segment that went into it.
	Generators []Generator `json:"generators,omitempty"`
	// MergedFrom names the directories a merged result was merged from.
	MergedFrom []string `json:"merged_from,omitempty"`
	// Shard says that this is one shard of a sharded merge (limitbench merge --shard I/K):
	// its entries are verified over the scopes of that shard only. nil otherwise, also in the
	// result that joins the shards.
	Shard *Shard `json:"shard,omitempty"`
	// JoinedShards is the number of shards a joined result (limitbench merge --join) was
	// joined from; 0 otherwise.
	JoinedShards int `json:"joined_shards,omitempty"`
	// MissingSegments names, as "I/N", the segments a partial merge went without (a generator
	// that died or never finished): their requests are in no figure and no history of the result.
	// A definite violation found without them stays definite where missing admissions can only
	// add to it; every pass is then inconclusive (segment.Merge states the rule).
	MissingSegments []string `json:"missing_segments,omitempty"`
	// Sequential is set on a run whose rounds were added until its figures could decide
	// (`run --repeat auto`): the rule, and per topology the rounds run and the level at which
	// the gate judges them (package gate states the rule).
	Sequential *Sequential `json:"sequential,omitempty"`
}

// Sequential is how a run chose its number of rounds: looking after every round from the first
// possible one, it stopped when every gated figure could decide or its budget was spent. Rule
// names the procedure (package gate's doc specifies it), Alpha is the level spent over all the
// looks of a topology, BudgetS the time budget of each topology's rounds, seconds.
type Sequential struct {
	Rule       string               `json:"rule"`
	Alpha      float64              `json:"alpha"`
	BudgetS    float64              `json:"budget_s"`
	Baseline   string               `json:"baseline,omitempty"`
	Topologies []SequentialTopology `json:"topologies"`
}

// SequentialTopology is where the rounds of one topology stopped. Level is the two-sided level
// of the last look, the one at which the gate must judge this topology's figures; Spent is
// the level spent by the looks before it. Decided says every gated figure could decide at its
// threshold; Undecided names those that could not, one phrase each.
type SequentialTopology struct {
	Topology  string   `json:"topology"`
	Rounds    int      `json:"rounds"`
	Looks     int      `json:"looks"`
	ElapsedS  float64  `json:"elapsed_s"`
	Spent     float64  `json:"spent"`
	Level     float64  `json:"level"`
	Decided   bool     `json:"decided"`
	Undecided []string `json:"undecided,omitempty"`
}

// Level returns the level at which the figures of topology were judged when the run stopped,
// and whether the run was sequential on it.
func (s *Sequential) Level(topology string) (float64, bool) {
	if s == nil {
		return 0, false
	}
	for _, t := range s.Topologies {
		if t.Topology == topology {
			return t.Level, true
		}
	}
	return 0, false
}

// Scenario describes what was run, once and structured: the scenario's name, description, file,
// seed and topologies, and its effective Settings. The reports render it in words (package
// report); results written before this version also held those words here (loop, mode,
// arrival, keys and skew as text, and duration_s, clients, algorithms and expect_violations
// beside settings), which Read ignores: settings say the same.
type Scenario struct {
	// Name is the scenario's name (the YAML file's name without extension unless it sets one).
	Name string `json:"name"`
	// Description is the scenario's one-paragraph description.
	Description string `json:"description,omitempty"`
	// File is the path the scenario was loaded from, as given.
	File string `json:"file,omitempty"`
	// Seed makes every run of the scenario send the same sequence.
	Seed int64 `json:"seed"`
	// Topologies lists the topologies the scenario asked for.
	Topologies []string `json:"topologies,omitempty"`
	// Settings are the scenario's effective settings; nil only in results written before they
	// were recorded.
	Settings *Settings `json:"settings,omitempty"`
}

// Settings are the settings a scenario ran with, after defaults and command-line overrides: enough
// to read what was run without the scenario file. Each concept is its owner's type, written in
// its own JSON form: durations in seconds, rates in requests per second across all clients. New
// fields may be added; existing ones keep their names and units.
type Settings struct {
	// Limit is what every built-in algorithm was configured with.
	Limit algorithms.Limit `json:"limit"`
	// Cost is the number of permits each request asked for.
	Cost int64 `json:"cost"`
	// WarmupS is the warmup before each measurement (measured, not verified), seconds.
	WarmupS float64 `json:"warmup_s"`
	// DurationS is the measured, verified time of each algorithm × topology, seconds.
	DurationS float64 `json:"duration_s"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// ClientMode is plain, pipeline or autopipeline; PipelineDepth is set with pipeline.
	ClientMode    load.Mode `json:"client_mode"`
	PipelineDepth int       `json:"pipeline_depth,omitempty"`
	// Arrival is the open-loop schedule; nil for a closed loop.
	Arrival *arrival.Arrival `json:"arrival,omitempty"`
	// Keys is how requests chose their subject.
	Keys load.Keys `json:"keys"`
	// ClockSkew is the clients' clock skew; left out for none.
	ClockSkew load.Skew `json:"clock_skew,omitzero"`
	// Algorithms lists what the scenario ran, "all" expanded, in order (without the reference
	// script); Custom describes the custom scripts among them.
	Algorithms []string                `json:"algorithms"`
	Custom     []algorithms.CustomSpec `json:"custom,omitempty"`
	// Expect is what the verifier had to find.
	Expect Expect `json:"expect"`
	// SpeedOnly names the algorithms the scenario measured for speed only (scenario speed_only):
	// their entries that never pressed the contract kept their verdicts.
	SpeedOnly SpeedOnly `json:"speed_only,omitempty"`
	// Thresholds are the scenario's thresholds as written.
	Thresholds []string `json:"thresholds,omitempty"`
	// Persistence is what the servers limitbench started kept on disk; left out for none.
	Persistence string `json:"persistence,omitempty"`
	// Faults describes each fault of the scenario's schedule, in order (scenarios.Fault.Name),
	// with its recovery.
	Faults []string `json:"faults,omitempty"`
	// Wait is the WAIT that followed every request (scenario wait_replicas, wait_timeout); left
	// out when none was sent.
	Wait *algorithms.Wait `json:"wait,omitempty"`
}

// SpeedOnly names the algorithms a scenario measures for speed only, not setting out to press
// their contracts: AllAlgorithms for every one (scenario `speed_only: true`), or their names
// (`speed_only: [name, ...]`). An entry it covers that never pressed its contract keeps its
// verdict and says the contract was not exercised (verify.Measurement.SpeedOnly); any other
// such entry is inconclusive.
type SpeedOnly []string

// AllAlgorithms in a SpeedOnly covers every algorithm of the scenario.
const AllAlgorithms = "all"

// Covers reports whether s covers algorithm.
func (s SpeedOnly) Covers(algorithm string) bool {
	for _, n := range s {
		if n == AllAlgorithms || n == algorithm {
			return true
		}
	}
	return false
}

// Expect lists what the verifier must find: a scenario's expect section (package scenarios
// loads it into this type), result.json's settings.expect.
type Expect struct {
	// Violations names algorithms that must be flagged with a definite violation (in every
	// topology), or the scenario fails. Their own failing verdicts are what the scenario expects
	// and do not fail it.
	Violations []string `json:"violations,omitempty"`
	// MayViolate names algorithms whose verdict does not decide the scenario either way: for
	// flawed variants whose flaw shows only on some runs (a minute boundary, a lucky interleaving).
	MayViolate []string `json:"may_violate,omitempty"`
}

// Environment describes the Redis a run talked to and the machine that drove it.
type Environment struct {
	// Backend is process, container or external.
	Backend string `json:"backend"`
	// Topology is single, cluster or sentinel (for a run over several, the topologies are in the entries and
	// this lists them joined by a comma).
	Topology string `json:"topology"`
	// Image is the container image, for the container backend.
	Image string `json:"image,omitempty"`
	// RedisVersion is the server's redis_version.
	RedisVersion string `json:"redis_version"`
	// Nodes is the number of Redis nodes (masters plus replicas).
	Nodes int `json:"nodes"`
	// CPUs is the number of logical CPUs of the harness machine.
	CPUs int `json:"cpus"`
	// GOMAXPROCS is the harness's GOMAXPROCS; GOMAXPROCSNote says how the command's CPU policy
	// chose it (cpus.Apply), and LocalServers is how many redis-servers the policy counted on this
	// machine: those a started backend ran, or an external target's seeds on a loopback address,
	// localhost or an address of this machine (0: Redis ran elsewhere, or no policy was applied).
	GOMAXPROCS     int    `json:"gomaxprocs,omitempty"`
	GOMAXPROCSNote string `json:"gomaxprocs_note,omitempty"`
	LocalServers   int    `json:"local_servers,omitempty"`
	// IdleNote says whether the command held the CPUs out of deep idle states while it measured
	// (cpus.Policy.Awake), or why not; empty when no CPU policy was applied.
	IdleNote string `json:"idle_note,omitempty"`
	// PinNote says where the command pinned Redis and the load generator (run --pin, capacity);
	// empty when nothing was pinned.
	PinNote string `json:"pin_note,omitempty"`
	// GoVersion is runtime.Version() of the harness.
	GoVersion string `json:"go_version"`
	// HarnessVersion is limitbench's version in one word (version.Info.Short); HarnessCommit
	// and HarnessDate are the commit it was built from and that commit's date, when the binary
	// knows them (version.Info).
	HarnessVersion string `json:"harness_version"`
	HarnessCommit  string `json:"harness_commit,omitempty"`
	HarnessDate    string `json:"harness_date,omitempty"`
	// OS and Arch are runtime.GOOS and runtime.GOARCH.
	OS   string `json:"os,omitempty"`
	Arch string `json:"arch,omitempty"`
}

// Entry returns r's entry for algorithm on topology, or nil when r has none.
func (r *Result) Entry(algorithm, topology string) *Entry {
	for i := range r.Entries {
		if r.Entries[i].Algorithm == algorithm && r.Entries[i].Topology == topology {
			return &r.Entries[i]
		}
	}
	return nil
}

// RunFiles are a run's files, by base name inside the results directory.
type RunFiles struct {
	Result     string   `json:"result,omitempty"`
	Markdown   string   `json:"report_md,omitempty"`
	HTML       string   `json:"report_html,omitempty"`
	Plots      []string `json:"plots,omitempty"`
	Histograms []string `json:"histograms,omitempty"`
}
