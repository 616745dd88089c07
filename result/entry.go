package result

import (
	"fmt"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/limitbench/limitbench/internal/faults/watch"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/verify"
)

// Entry is the result of one algorithm on one topology. Counts are requests; rates are per second
// of measured time; latencies are in microseconds.
type Entry struct {
	Algorithm string `json:"algorithm"`
	Topology  string `json:"topology"`
	// Custom is true for a user's own script named by the scenario.
	Custom bool `json:"custom,omitempty"`
	// Shard, in a shard of a sharded merge (Result.Shard), says how its verification was
	// split: ShardBySubject, ShardByClient or ShardWhole; empty otherwise.
	Shard string `json:"shard,omitempty"`
	// Call is how the script was called: fcall when it ran as a Redis Function (scenario call:
	// fcall, a built-in algorithm), evalsha otherwise (also for sliding-log-published, which sends
	// plain commands either way). Empty in results written before it was recorded.
	Call string `json:"call,omitempty"`
	// StrictKeys is true when the scripts ran behind the strict-keys guard (`run --strict-keys`):
	// every command they called was checked for keys not passed in KEYS, and refused with a
	// STRICTKEYS error when it had one (see WarningStrictKeys). The guard costs a command per
	// command: latency and server figures are not comparable with a run without it.
	StrictKeys bool `json:"strict_keys,omitempty"`
	// InProgress marks the entry of a measurement still going when the result was written: a
	// checkpoint of a long run (the result is CutShort, and its note says it is a checkpoint).
	// Its figures cover the measured part so far; its verdict is inconclusive, or fail when the
	// streaming verifier had already found a definite violation (more requests cannot undo
	// one); what only the measurement's end gives (late and dropped requests, possible
	// violations, accuracy, the server's cost, the violation explorer, the node watch, the call
	// mode, warnings) is left out. The end of the run replaces it.
	InProgress bool `json:"in_progress,omitempty"`

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
	// Fairness is how the limits that several clients shared divided their admissions among
	// them (verify.NewFairness); nil when no limit was shared (a limit per client, or one
	// client per subject) or in results written before it was recorded.
	Fairness *verify.Fairness `json:"fairness,omitempty"`
	Server   Server           `json:"server"`
	// Timeline is offered, admitted, denied and errors over time, for the accuracy plot.
	Timeline Timeline `json:"timeline"`
	// Excerpt is the admission log around the worst violation, definite or else possible
	// (verify.NewExcerpt: at most verify.MaxExcerpt requests), for the report's violation
	// explorer; nil without a violation or in results written before it was recorded.
	Excerpt *verify.Excerpt `json:"excerpt,omitempty"`
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
	Watch *watch.Summary `json:"watch,omitempty"`
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
	// Kind names the warning: WarningKeysLeft, WarningHistoryLeftOut, WarningPartialMerge,
	// WarningStrictKeys.
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

// WarningHistoryLeftOut: the measurement was verified as it ran and made more decisions than
// limitbench keeps in memory, so the sections built from its whole history (the violation
// explorer, fairness, the timeline's window use, the server's bytes per key) were left out.
const WarningHistoryLeftOut = "history-left-out"

// WarningStrictKeys: behind the strict-keys guard, the script called a command on a key not
// passed in KEYS, which Dragonfly, Kvrocks and Upstash refuse and a Redis Cluster may keep on
// another node. A portability finding, not a violation: the requests it refused count as errors.
const WarningStrictKeys = "strict-keys"

// WarningPartialMerge: the entry was merged without some segments of its run (see
// Result.MissingSegments), so its figures are of the present segments' requests only.
const WarningPartialMerge = "partial-merge"

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
// or 0 when it has no meaning (no contract). Use holds, per limit of the contract, the most any
// scope held in the limit's own window in each bin, with the allowance a correct limiter stays
// within (verify.NewWindowUse): what the accuracy plot draws against the contract; nil without a
// contract or in results written before it was recorded. All slices per bin have the same
// length.
type Timeline struct {
	load.Series
	Limit []float64          `json:"limit,omitempty"`
	Use   []verify.WindowUse `json:"use,omitempty"`
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

// Round3 rounds x to three decimals, as result.json holds rates, ratios and costs.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// NewEntry returns the entry of algorithm on topology with load's figures of res: its counts,
// lateness, duration and rates (rates rounded to three decimals). The other sections are their
// owners' to fill.
func NewEntry(algorithm, topology string, res *load.Result) Entry {
	c := res.Counts
	e := Entry{
		Algorithm:     algorithm,
		Topology:      topology,
		Requests:      int64(c.Requests),
		Allowed:       int64(c.Allowed),
		Denied:        int64(c.Denied),
		Errors:        int64(c.Failed),
		Unknown:       int64(c.Unknown),
		Dropped:       int64(c.Missed + c.Dropped),
		Late:          int64(c.Late),
		DurationS:     res.Duration.Seconds(),
		OfferedRPS:    Round3(res.OfferedRate),
		ThroughputRPS: Round3(res.Throughput),
	}
	if c.Requests > 0 {
		e.LateFraction = float64(c.Late) / float64(c.Requests)
	}
	if res.Plan.Wait.Enabled() {
		short := int64(c.WaitShort)
		e.WaitShort = &short
	}
	return e
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
