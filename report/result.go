// Package report owns what a run leaves behind: the result.json schema (limitbench/result/v1) and
// its reading and writing, the HdrHistogram percentile-distribution files (.hgrm), the gonum plots
// (latency "nines", accuracy over time, side-by-side comparison), the Markdown and self-contained
// HTML reports, and the run-against-run comparison of saved results.
//
// The runner fills a Result and calls WriteAll; `limitbench report` reads result.json files back with
// ReadResult and rebuilds everything from them alone, so a Result carries every figure the plots and
// reports need (encoded histograms, timeline bins, violation times), not only the summary numbers.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// SchemaVersion is the value of Result.Schema this package writes and reads.
const SchemaVersion = "limitbench/result/v1"

// ResultFile is the name Write gives result.json inside a results directory.
const ResultFile = "result.json"

// ErrSchema reports a result.json that is not limitbench/result/v1 or is inconsistent with it.
var ErrSchema = errors.New("report: not a limitbench/result/v1 result")

// Verdict is the outcome of verifying one entry. See DESIGN.md "Words".
type Verdict string

const (
	// Pass: no definite violation and no broken threshold.
	Pass Verdict = "pass"
	// Fail: at least one definite violation or a broken threshold.
	Fail Verdict = "fail"
	// Inconclusive: the run cannot support a verdict (no admissions, too many unknown outcomes, the
	// load generator fell behind). Verification.Reasons says which.
	Inconclusive Verdict = "inconclusive"
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
// to read what was run without the scenario file. Durations are seconds, rates are requests per
// second across all clients. New fields may be added; existing ones keep their names and units.
type Settings struct {
	// Limit is what every built-in algorithm was configured with.
	Limit LimitSettings `json:"limit"`
	// Cost is the number of permits each request asked for.
	Cost int64 `json:"cost"`
	// WarmupS is the warmup before each measurement (measured, not verified), seconds.
	WarmupS float64 `json:"warmup_s"`
	// DurationS is the measured, verified time of each algorithm × topology, seconds.
	DurationS float64 `json:"duration_s"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// ClientMode is plain, pipeline or autopipeline; PipelineDepth is set with pipeline.
	ClientMode    string `json:"client_mode"`
	PipelineDepth int    `json:"pipeline_depth,omitempty"`
	// Arrival is the open-loop schedule; nil for a closed loop.
	Arrival *ArrivalSettings `json:"arrival,omitempty"`
	// Keys is how requests chose their subject.
	Keys KeySettings `json:"keys"`
	// ClockSkew is the clients' clock skew; nil for none.
	ClockSkew *SkewSettings `json:"clock_skew,omitempty"`
	// Algorithms lists what the scenario ran, "all" expanded, in order (without the reference
	// script); Custom describes the custom scripts among them.
	Algorithms []string         `json:"algorithms"`
	Custom     []CustomSettings `json:"custom,omitempty"`
	// Expect is what the verifier had to find.
	Expect ExpectSettings `json:"expect"`
	// Thresholds are the scenario's thresholds as written.
	Thresholds []string `json:"thresholds,omitempty"`
}

// LimitSettings is the scenario's limit with its defaults applied: Burst and ConsumerLimit are
// Limit when the scenario leaves them out.
type LimitSettings struct {
	Limit         int64   `json:"limit"`
	WindowS       float64 `json:"window_s"`
	Burst         int64   `json:"burst"`
	ConsumerLimit int64   `json:"consumer_limit"`
}

// ArrivalSettings is an open-loop schedule. Kind is rate, ramp, steps or spike and says which of
// the other fields is set; Align is set when the schedule was aligned to the clock.
type ArrivalSettings struct {
	Kind  string         `json:"kind"`
	Rate  float64        `json:"rate,omitempty"`
	Ramp  *RampSettings  `json:"ramp,omitempty"`
	Steps []StepSettings `json:"steps,omitempty"`
	Spike *SpikeSettings `json:"spike,omitempty"`
	Align *AlignSettings `json:"align,omitempty"`
}

// RampSettings goes linearly from From to To over warmup and duration.
type RampSettings struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
}

// StepSettings is Rate for ForS seconds; the steps repeat.
type StepSettings struct {
	ForS float64 `json:"for_s"`
	Rate float64 `json:"rate"`
}

// SpikeSettings is Base, raised to Peak for ForS seconds from AtS, again every EveryS seconds when
// that is set.
type SpikeSettings struct {
	Base   float64 `json:"base"`
	Peak   float64 `json:"peak"`
	AtS    float64 `json:"at_s"`
	ForS   float64 `json:"for_s"`
	EveryS float64 `json:"every_s,omitempty"`
}

// AlignSettings puts the schedule's start at a Unix time u with u mod EveryS = OffsetS.
type AlignSettings struct {
	EveryS  float64 `json:"every_s"`
	OffsetS float64 `json:"offset_s"`
}

// KeySettings is key choice: Count subjects, Distribution uniform, zipf (with ZipfS) or hot (with
// HotShare).
type KeySettings struct {
	Count        int     `json:"count"`
	Distribution string  `json:"distribution"`
	ZipfS        float64 `json:"zipf_s,omitempty"`
	HotShare     float64 `json:"hot_share,omitempty"`
}

// SkewSettings is per-client clock skew: OffsetsS cycled over clients, or clients spread evenly
// over ±SpreadS.
type SkewSettings struct {
	OffsetsS []float64 `json:"offsets_s,omitempty"`
	SpreadS  float64   `json:"spread_s,omitempty"`
}

// CustomSettings describes a custom script entry: its file as the scenario gave it, its key and
// argument templates, its allowed rule and its contract, as written.
type CustomSettings struct {
	Name     string   `json:"name"`
	Script   string   `json:"script"`
	Keys     []string `json:"keys"`
	Args     []string `json:"args,omitempty"`
	Allowed  string   `json:"allowed"`
	Contract string   `json:"contract"`
}

// ExpectSettings is the scenario's expect section: Violations must be flagged; MayViolate are
// tolerated either way.
type ExpectSettings struct {
	Violations []string `json:"violations,omitempty"`
	MayViolate []string `json:"may_violate,omitempty"`
}

// Environment describes the Redis a run talked to and the machine that drove it.
type Environment struct {
	// Backend is process, container or external.
	Backend string `json:"backend"`
	// Topology is single or cluster (for a run over both, the topologies are in the entries and
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
	// GOMAXPROCS is the harness's GOMAXPROCS.
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`
	// GoVersion is runtime.Version() of the harness.
	GoVersion string `json:"go_version"`
	// HarnessVersion is limitbench's version (module version or VCS revision).
	HarnessVersion string `json:"harness_version"`
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
	LatencyUS Latency `json:"latency_us"`
	// ServiceLatencyUS is measured from the actual send.
	ServiceLatencyUS Latency `json:"service_latency_us"`
	// Histograms holds the full distributions behind LatencyUS and ServiceLatencyUS.
	Histograms Histograms `json:"histograms"`

	Verification Verification `json:"verification"`
	Accuracy     Accuracy     `json:"accuracy"`
	Server       Server       `json:"server"`
	// Timeline is offered, admitted, denied and errors over time, for the accuracy plot.
	Timeline Timeline `json:"timeline"`

	// Samples holds per-repeat figures when the runner repeated the measurement; the summary fields
	// above are then the median (or the merged histograms) of the samples.
	Samples []Sample `json:"samples,omitempty"`
	// Relative holds ratios against Result.Reference on the same topology; nil when there is none.
	Relative *Relative `json:"relative,omitempty"`

	// Files lists this entry's files by base name; WriteAll fills it.
	Files Files `json:"files"`
}

// Latency is a summary of one latency distribution, in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Histograms holds HdrHistograms of latency in microseconds, each as the base64 text of its V2
// compressed encoding (what hdrhistogram-go's Encode and Decode exchange). Empty means not
// recorded.
type Histograms struct {
	// Latency is from intended send time (coordinated-omission corrected).
	Latency string `json:"latency,omitempty"`
	// Service is from actual send time.
	Service string `json:"service,omitempty"`
}

// Verification is what the verifier concluded about one entry.
type Verification struct {
	Verdict Verdict `json:"verdict"`
	// Reasons says, in words, why the verdict is fail or inconclusive.
	Reasons []string `json:"reasons,omitempty"`
	// Contract is the contract checked, as algorithms.Contract.String renders it.
	Contract string `json:"contract"`
	// DefiniteViolations holds for every placement of decision times; PossibleViolations for some.
	DefiniteViolations int64 `json:"definite_violations"`
	PossibleViolations int64 `json:"possible_violations"`
	// WorstExcess is the largest number of permits above the contract in one window (0 if none).
	WorstExcess int64 `json:"worst_excess"`
	// Where locates the worst excess in words: key and window.
	Where string `json:"where,omitempty"`
	// ExpectedViolation is true when the scenario expects this algorithm to be flagged.
	ExpectedViolation bool `json:"expected_violation"`
	// MayViolate is true when the scenario tolerates this algorithm's violations
	// (expect.may_violate): its verdict is shown but decides nothing.
	MayViolate bool `json:"may_violate,omitempty"`
	// Thresholds holds the scenario's thresholds that apply to this entry, each checked against its
	// figures. A broken threshold makes Verdict fail; one that cannot be evaluated (no data for its
	// metric) makes a pass inconclusive. Reasons says which, in words.
	Thresholds []ThresholdCheck `json:"thresholds,omitempty"`
	// ViolationTimesS holds the time of each definite violation, seconds since the entry started
	// (at most the runner's cap; ViolationTimesOmitted counts the rest).
	ViolationTimesS       []float64 `json:"violation_times_s,omitempty"`
	ViolationTimesOmitted int64     `json:"violation_times_omitted,omitempty"`
}

// ThresholdStatus is the result of checking one threshold against one entry.
type ThresholdStatus string

// The threshold statuses.
const (
	// ThresholdHeld: the entry's figure keeps the bound.
	ThresholdHeld ThresholdStatus = "held"
	// ThresholdBroken: the entry's figure breaks the bound; the entry's verdict is fail.
	ThresholdBroken ThresholdStatus = "broken"
	// ThresholdUnevaluated: the entry has no data for the metric (no completed request, nothing an
	// exact limiter admitted), so the bound can neither hold nor break; it does not pass.
	ThresholdUnevaluated ThresholdStatus = "unevaluated"
)

// ThresholdCheck is one scenario threshold checked against one entry.
type ThresholdCheck struct {
	// Threshold is the threshold as the scenario wrote it, for example "gcra: efficiency > 0.9".
	Threshold string          `json:"threshold"`
	Status    ThresholdStatus `json:"status"`
	// Value is the entry's figure in the metric's unit (µs for latencies, requests per second for
	// throughput, a fraction for efficiency and errors); 0 when unevaluated.
	Value float64 `json:"value"`
	// Shown is Value formatted with its unit, or why the threshold could not be evaluated.
	Shown string `json:"shown"`
}

// Accuracy compares admissions with an exact limiter replaying the same offered sequence.
type Accuracy struct {
	// IdealAllowed is what the exact limiter admitted.
	IdealAllowed int64 `json:"ideal_allowed"`
	// Efficiency is Allowed / IdealAllowed (1 is exact; above 1 over-admits).
	Efficiency float64 `json:"efficiency"`
	// FalseDenials are denials the exact limiter would have admitted.
	FalseDenials int64 `json:"false_denials"`
	// MaxWindowRatio is, for window contracts, the most permits admitted in any sliding window
	// (t−W, t] divided by the limit L (fixed-window allows up to 2 across a window boundary); for
	// token-bucket, the most tokens drawn and not yet refilled over the capacity C. See
	// verify.AccuracyReport.MaxWindowRatio.
	MaxWindowRatio float64 `json:"max_window_ratio"`
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

// Timeline is counts per fixed-width bin from the start of the entry's measurement.
// All slices have the same length.
type Timeline struct {
	// BinS is the bin width in seconds.
	BinS float64 `json:"bin_s"`
	// Offered, Admitted, Denied and Errors are request counts per bin (Errors includes unknown).
	Offered  []int64 `json:"offered"`
	Admitted []int64 `json:"admitted"`
	Denied   []int64 `json:"denied"`
	Errors   []int64 `json:"errors"`
	// Limit is the most the contract allows in each bin over all subjects that were offered
	// requests in it, permits per bin; nil or 0 when it has no meaning (no contract).
	Limit []float64 `json:"limit,omitempty"`
}

// Sample is one repeat's figures.
type Sample struct {
	Repeat             int     `json:"repeat"`
	ThroughputRPS      float64 `json:"throughput_rps"`
	LatencyUS          Latency `json:"latency_us"`
	Efficiency         float64 `json:"efficiency"`
	USecPerCall        float64 `json:"usec_per_call"`
	CPUUSecPerDecision float64 `json:"cpu_usec_per_decision"`
	BytesPerKey        float64 `json:"bytes_per_key"`
	Verdict            Verdict `json:"verdict"`
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
		e.LatencyUS = Summarize(latency)
	}
	if service != nil {
		s, err := EncodeHistogram(service)
		if err != nil {
			return fmt.Errorf("encode service histogram of %s: %w", e.Name(), err)
		}
		e.Histograms.Service = s
		e.ServiceLatencyUS = Summarize(service)
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

// Summarize returns the latency summary of h, whose values are microseconds.
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50:  float64(h.ValueAtQuantile(50)),
		P90:  float64(h.ValueAtQuantile(90)),
		P99:  float64(h.ValueAtQuantile(99)),
		P999: float64(h.ValueAtQuantile(99.9)),
		Max:  float64(h.Max()),
		Mean: math.Round(h.Mean()*1000) / 1000,
	}
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

// Verdict-table labels beyond the three verdicts; see Entry.Outcome and Result.OutcomeOf.
const (
	// OutcomeCaught: a planted bug was flagged with a definite violation, as the scenario asked.
	OutcomeCaught = "expected violation caught"
	// OutcomeMissed: a planted bug was not flagged; the harness failed to catch it.
	OutcomeMissed = "expected violation missed"
	// OutcomeTolerated: the verdict is fail, but the scenario lists the algorithm under
	// expect.may_violate, so it decides nothing.
	OutcomeTolerated = "fail (tolerated)"
	// OutcomeReference: the reference script's entry; it calibrates relative figures and is not
	// verified.
	OutcomeReference = "reference"
)

// Outcome returns the verdict-table label of an entry: "pass", "fail", "inconclusive",
// OutcomeCaught, OutcomeMissed or OutcomeTolerated. A broken threshold always shows as "fail",
// even on an entry whose violation was expected or tolerated. Result.OutcomeOf also recognises the
// reference script.
func (e *Entry) Outcome() string {
	v := e.Verification
	broken := v.ThresholdBroken()
	if v.ExpectedViolation && !broken {
		if v.DefiniteViolations > 0 {
			return OutcomeCaught
		}
		if v.Verdict != Inconclusive {
			return OutcomeMissed
		}
	}
	if v.MayViolate && v.Verdict == Fail && !broken {
		return OutcomeTolerated
	}
	if v.Verdict == "" {
		return "unknown"
	}
	return string(v.Verdict)
}

// ThresholdBroken reports whether any of v's thresholds is broken.
func (v *Verification) ThresholdBroken() bool {
	for _, t := range v.Thresholds {
		if t.Status == ThresholdBroken {
			return true
		}
	}
	return false
}

// IsReference reports whether e is the entry of r's reference script.
func (r *Result) IsReference(e *Entry) bool { return r.Reference != "" && e.Algorithm == r.Reference }

// OutcomeOf returns the verdict-table label of e, one of r's entries: OutcomeReference for the
// reference script, else e.Outcome().
func (r *Result) OutcomeOf(e *Entry) string {
	if r.IsReference(e) {
		return OutcomeReference
	}
	return e.Outcome()
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
	return writeFile(filepath.Join(dir, ResultFile), append(b, '\n'))
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

// writeFile writes b to path, creating its directory, and reports a failed Close.
func writeFile(path string, b []byte) (err error) {
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
