package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/verify"
	"github.com/limitbench/limitbench/scenarios"
)

// SchemaVersion is the value of Result.Schema this package writes and reads.
const SchemaVersion = "limitbench/result/v1"

// ResultFile is the name Write gives result.json inside a results directory.
const ResultFile = "result.json"

// ErrSchema reports a result.json that is not limitbench/result/v1 or is inconsistent with it.
var ErrSchema = errors.New("report: not a limitbench/result/v1 result")

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
}

// Scenario describes the workload, as the scenario file gave it.
type Scenario struct {
	// Name is the scenario's name (the YAML file's name without extension unless it sets one).
	Name string `json:"name"`
	// Description is the scenario's one-paragraph description.
	Description string `json:"description,omitempty"`
	// File is the path the scenario was loaded from, as given.
	File string `json:"file,omitempty"`
	// Seed makes every run of the scenario send the same sequence.
	Seed int64 `json:"seed"`
	// DurationS is the planned measuring time per algorithm × topology, in seconds.
	DurationS float64 `json:"duration_s"`
	// Clients is the number of concurrent clients (workers).
	Clients int `json:"clients,omitempty"`
	// Loop is "open" or "closed".
	Loop string `json:"loop,omitempty"`
	// Mode is the client mode: plain, pipeline(N) or autopipeline.
	Mode string `json:"mode,omitempty"`
	// Arrival describes the open-loop schedule in words, for example "constant 2000/s".
	Arrival string `json:"arrival,omitempty"`
	// Keys describes key choice in words, for example "1000 keys, zipf s=1.1".
	Keys string `json:"keys,omitempty"`
	// Skew describes per-client clock skew in words; empty for none.
	Skew string `json:"skew,omitempty"`
	// Topologies lists the topologies the scenario asked for.
	Topologies []string `json:"topologies,omitempty"`
	// Algorithms lists the algorithms the scenario asked for, in its order.
	Algorithms []string `json:"algorithms,omitempty"`
	// ExpectViolations lists the algorithms the scenario expects the verifier to flag.
	ExpectViolations []string `json:"expect_violations,omitempty"`
	// Settings are the scenario's effective settings in a structured form (the fields above say the
	// same in words); nil in results written before it existed.
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
	Arrival *scenarios.Arrival `json:"arrival,omitempty"`
	// Keys is how requests chose their subject.
	Keys load.Keys `json:"keys"`
	// ClockSkew is the clients' clock skew; left out for none.
	ClockSkew load.Skew `json:"clock_skew,omitzero"`
	// Algorithms lists what the scenario ran, "all" expanded, in order (without the reference
	// script); Custom describes the custom scripts among them.
	Algorithms []string                `json:"algorithms"`
	Custom     []algorithms.CustomSpec `json:"custom,omitempty"`
	// Expect is what the verifier had to find.
	Expect scenarios.Expect `json:"expect"`
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

// Entry is the result of one algorithm on one topology. Counts are requests; rates are per second
// of measured time; latencies are in microseconds.
type Entry struct {
	Algorithm string `json:"algorithm"`
	Topology  string `json:"topology"`
	// Custom is true for a user's own script named by the scenario.
	Custom bool `json:"custom,omitempty"`
	// Call is how the script was called: fcall when it ran as a Redis Function (scenario call:
	// fcall, a built-in algorithm), evalsha otherwise (also for sliding-log-published, which sends
	// plain commands either way). Empty in results written before it was recorded.
	Call string `json:"call,omitempty"`

	// Requests is every request sent: Allowed + Denied + Errors + Unknown.
	Requests int64 `json:"requests"`
	Allowed  int64 `json:"allowed"`
	Denied   int64 `json:"denied"`
	// Errors are requests that failed before Redis could have run the script (a decoding error or a
	// refused connection).
	Errors int64 `json:"errors"`
	// Unknown are requests whose effect is unknown (timed out after sending): the verifier treats
	// them as possible admissions.
	Unknown int64 `json:"unknown"`
	// Dropped counts planned requests the generator never sent (it was stopped or fell too far
	// behind); nothing is dropped silently.
	Dropped int64 `json:"dropped"`
	// Late counts requests sent more than the scenario's lateness budget after their intended time.
	Late int64 `json:"late"`
	// LateFraction is Late / Requests; above 0.01 an open-loop run is inconclusive.
	LateFraction float64 `json:"late_fraction"`

	// DurationS is the measured time, in seconds.
	DurationS float64 `json:"duration_s"`
	// OfferedRPS is the planned arrival rate, requests per second.
	OfferedRPS float64 `json:"offered_rps"`
	// ThroughputRPS is completed decisions (Allowed + Denied) per second of DurationS.
	ThroughputRPS float64 `json:"throughput_rps"`

	// LatencyUS is measured from each request's intended send time (coordinated-omission corrected).
	LatencyUS load.Latency `json:"latency_us"`
	// ServiceLatencyUS is measured from the actual send.
	ServiceLatencyUS load.Latency `json:"service_latency_us"`
	// Histograms holds the full distributions behind LatencyUS and ServiceLatencyUS.
	Histograms Histograms `json:"histograms"`

	Verification verify.Summary         `json:"verification"`
	Accuracy     verify.AccuracySummary `json:"accuracy"`
	Server       Server                 `json:"server"`
	// Timeline is offered, admitted, denied and errors over time, for the accuracy plot.
	Timeline Timeline `json:"timeline"`
	// ErrorClasses lists the errors of the measured part by kind (Redis's error code, or what
	// happened to the connection) and outcome, the most frequent first, each with the text of
	// its first error; empty when no request failed.
	ErrorClasses []load.ErrorClass `json:"error_classes,omitempty"`
	// WaitShort counts, when a WAIT followed every request (Settings.Wait), the measured requests
	// whose WAIT came back with fewer replicas than it asked for (its timeout passed) or with no
	// answer: their admissions stand, and a failover may still lose them. nil without a WAIT.
	WaitShort *int64 `json:"wait_short,omitempty"`
	// Watch is what the node watch saw of every node during the measurement: run id, role and
	// uptime before and after, and each restart, promotion, flush or outage in between; nil when
	// the nodes were not watched.
	Watch *faults.Summary `json:"watch,omitempty"`
	// Warnings are what the run leaves the user to deal with that no verdict shows, such as keys
	// left behind on an external server.
	Warnings []Warning `json:"warnings,omitempty"`

	// Samples holds per-repeat figures when the runner repeated the measurement; the summary fields
	// above are then the median (or the merged histograms) of the samples.
	Samples []Sample `json:"samples,omitempty"`
	// Relative holds ratios against Result.Reference on the same topology; nil when there is none.
	Relative *Relative `json:"relative,omitempty"`

	// Files lists this entry's files by base name; WriteAll fills it.
	Files Files `json:"files"`
	// Partial holds, in one segment's result, what merging needs (see Partial).
	Partial *Partial `json:"partial,omitempty"`
}

// Warning is something a run leaves the user to deal with that no verdict shows. The summary and
// the report print Message.
type Warning struct {
	// Kind names the warning: WarningKeysLeft.
	Kind string `json:"kind"`
	// Message says what happened and what to do, in words.
	Message string `json:"message"`
	// Prefix and Keys, for WarningKeysLeft: the key prefix and how many keys under it were left
	// (-1 when they could not be counted).
	Prefix string `json:"prefix,omitempty"`
	Keys   int64  `json:"keys,omitempty"`
	// Remove, for WarningKeysLeft, is a shell command that removes the keys, for a user allowed
	// to SCAN and UNLINK them.
	Remove string `json:"remove,omitempty"`
}

// WarningKeysLeft: the cleanup of a measurement's keys on an external server failed, and keys
// were left behind.
const WarningKeysLeft = "keys-left-behind"

// Histograms holds HdrHistograms of latency in microseconds, each as the base64 text of its V2
// compressed encoding (what hdrhistogram-go's Encode and Decode exchange). Empty means not
// recorded.
type Histograms struct {
	// Latency is from intended send time (coordinated-omission corrected).
	Latency string `json:"latency,omitempty"`
	// Service is from actual send time.
	Service string `json:"service,omitempty"`
}

// Server is what the decisions cost Redis. Zero means not measured.
type Server struct {
	// USecPerCall is Redis's own microseconds per call of the script (INFO commandstats).
	USecPerCall float64 `json:"usec_per_call"`
	// CPUUSecPerDecision is Redis process CPU (user + sys) per decision, microseconds.
	CPUUSecPerDecision float64 `json:"cpu_usec_per_decision"`
	// BytesPerKey is the memory per limited subject, bytes (used_memory delta / subjects).
	BytesPerKey float64 `json:"bytes_per_key"`
	// Keys is the number of Redis keys the algorithm left at the end.
	Keys int64 `json:"keys,omitempty"`
}

// Timeline is the measurement over time, for the accuracy plot: load's counts per bin (offered,
// admitted permits, denied, errors) and, beside them, the most the contract allows in each bin
// over every subject offered requests in it (verify.Measurement.BinLimits), permits per bin; nil
// or 0 when it has no meaning (no contract). All slices have the same length.
type Timeline struct {
	load.Series
	Limit []float64 `json:"limit,omitempty"`
}

// Sample is one repeat's figures.
type Sample struct {
	Repeat             int            `json:"repeat"`
	ThroughputRPS      float64        `json:"throughput_rps"`
	LatencyUS          load.Latency   `json:"latency_us"`
	Efficiency         float64        `json:"efficiency"`
	USecPerCall        float64        `json:"usec_per_call"`
	CPUUSecPerDecision float64        `json:"cpu_usec_per_decision"`
	BytesPerKey        float64        `json:"bytes_per_key"`
	Verdict            verify.Verdict `json:"verdict"`
}

// Relative holds ratios of this entry's figures to the reference's (entry / reference): 2 means
// twice the reference. Zero means not computable.
type Relative struct {
	Reference          string  `json:"reference"`
	Throughput         float64 `json:"throughput"`
	P50                float64 `json:"p50"`
	P99                float64 `json:"p99"`
	USecPerCall        float64 `json:"usec_per_call"`
	CPUUSecPerDecision float64 `json:"cpu_usec_per_decision"`
	BytesPerKey        float64 `json:"bytes_per_key"`
}

// Files are an entry's files, by base name inside the results directory.
type Files struct {
	Histogram        string   `json:"hgrm,omitempty"`
	ServiceHistogram string   `json:"service_hgrm,omitempty"`
	Accuracy         []string `json:"accuracy,omitempty"`
}

// RunFiles are a run's files, by base name inside the results directory.
type RunFiles struct {
	Result     string   `json:"result,omitempty"`
	Markdown   string   `json:"report_md,omitempty"`
	HTML       string   `json:"report_html,omitempty"`
	Plots      []string `json:"plots,omitempty"`
	Histograms []string `json:"histograms,omitempty"`
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

// Name returns "<algorithm>-<topology>", the stem of the entry's file names.
func (e *Entry) Name() string { return e.Algorithm + "-" + e.Topology }

// SetHistograms stores latency (from intended time) and service (from send) histograms, both in
// microseconds, and fills LatencyUS and ServiceLatencyUS from them. A nil histogram is skipped.
func (e *Entry) SetHistograms(latency, service *hdrhistogram.Histogram) error {
	if latency != nil {
		s, err := EncodeHistogram(latency)
		if err != nil {
			return fmt.Errorf("encode latency histogram of %s: %w", e.Name(), err)
		}
		e.Histograms.Latency = s
		e.LatencyUS = load.Summarize(latency)
	}
	if service != nil {
		s, err := EncodeHistogram(service)
		if err != nil {
			return fmt.Errorf("encode service histogram of %s: %w", e.Name(), err)
		}
		e.Histograms.Service = s
		e.ServiceLatencyUS = load.Summarize(service)
	}
	return nil
}

// LatencyHistogram decodes Histograms.Latency; it returns nil, nil when none was recorded.
func (e *Entry) LatencyHistogram() (*hdrhistogram.Histogram, error) {
	return DecodeHistogram(e.Histograms.Latency)
}

// ServiceHistogram decodes Histograms.Service; it returns nil, nil when none was recorded.
func (e *Entry) ServiceHistogram() (*hdrhistogram.Histogram, error) {
	return DecodeHistogram(e.Histograms.Service)
}

// EncodeHistogram returns the base64 V2 compressed encoding of h.
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// DecodeHistogram decodes what EncodeHistogram returned; "" gives nil, nil.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return nil, nil
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// Verdict-table labels beyond the three verdicts; see Entry.Label and Result.LabelOf.
const (
	// LabelCaught: a planted bug was flagged with a definite violation, as the scenario asked.
	LabelCaught = "expected violation caught"
	// LabelMissed: a planted bug was not flagged; the harness failed to catch it.
	LabelMissed = "expected violation missed"
	// LabelTolerated: the verdict is fail, but the scenario lists the algorithm under
	// expect.may_violate, so it decides nothing.
	LabelTolerated = "fail (tolerated)"
	// LabelReference: the reference script's entry; it calibrates relative figures and is not
	// verified.
	LabelReference = "reference"
)

// Label returns the verdict-table label of an entry: "pass", "fail", "inconclusive",
// LabelCaught, LabelMissed or LabelTolerated. A broken threshold always shows as "fail", even on
// an entry whose violation was expected or tolerated. Result.LabelOf also recognises the
// reference script.
func (e *Entry) Label() string {
	v := e.Verification
	broken := v.ThresholdBroken()
	if v.ExpectedViolation && !broken {
		if v.DefiniteViolations > 0 {
			return LabelCaught
		}
		if v.Verdict != verify.Inconclusive {
			return LabelMissed
		}
	}
	if v.MayViolate && v.Verdict == verify.Fail && !broken {
		return LabelTolerated
	}
	if v.Verdict == "" {
		return "unknown"
	}
	return string(v.Verdict)
}

// IsReference reports whether e is the entry of r's reference script.
func (r *Result) IsReference(e *Entry) bool { return r.Reference != "" && e.Algorithm == r.Reference }

// LabelOf returns the verdict-table label of e, one of r's entries: LabelReference for the
// reference script, else e.Label().
func (r *Result) LabelOf(e *Entry) string {
	if r.IsReference(e) {
		return LabelReference
	}
	return e.Label()
}

// Validate reports every inconsistency of r with the schema at once, wrapped in ErrSchema.
func (r *Result) Validate() error {
	var errs []error
	if r.Schema != SchemaVersion {
		errs = append(errs, fmt.Errorf("schema is %q, want %q", r.Schema, SchemaVersion))
	}
	seen := map[string]bool{}
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.Algorithm == "" || e.Topology == "" {
			errs = append(errs, fmt.Errorf("entries[%d]: algorithm and topology are required", i))
			continue
		}
		if seen[e.Name()] {
			errs = append(errs, fmt.Errorf("entries[%d]: duplicate %s", i, e.Name()))
		}
		seen[e.Name()] = true
		t := e.Timeline
		n := len(t.Offered)
		if len(t.Admitted) != n || len(t.Denied) != n || len(t.Errors) != n || (t.Limit != nil && len(t.Limit) != n) {
			errs = append(errs, fmt.Errorf("entries[%d] (%s): timeline slices differ in length", i, e.Name()))
		}
		if n > 0 && !(t.BinS > 0) {
			errs = append(errs, fmt.Errorf("entries[%d] (%s): timeline bin_s must be > 0", i, e.Name()))
		}
		for _, h := range []struct{ name, s string }{{"latency", e.Histograms.Latency}, {"service", e.Histograms.Service}} {
			if _, err := DecodeHistogram(h.s); err != nil {
				errs = append(errs, fmt.Errorf("entries[%d] (%s): histograms.%s: %w", i, e.Name(), h.name, err))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrSchema, errors.Join(errs...))
}

// Write writes r as indented JSON to dir/result.json, creating dir, and records the name in
// r.Files.Result. An empty r.Schema is set to SchemaVersion.
func (r *Result) Write(dir string) error {
	if r.Schema == "" {
		r.Schema = SchemaVersion
	}
	r.Files.Result = ResultFile
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	return WriteFile(filepath.Join(dir, ResultFile), append(b, '\n'))
}

// ReadResult reads and validates a result.json. Errors name the path.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrSchema, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteFile writes b to path, creating its directory, and reports a failed Close.
func WriteFile(path string, b []byte) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
