package result

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/faults/watch"
	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/verify"
)

// fullResultGolden is a result.json with every section and field populated: the bytes
// limitbench/result/v1 is written as.
var fullResultGolden = filepath.Join("testdata", "full-result.json")

// fullResult builds the result held in testdata/full-result.json: two entries, every field of
// every section set (the arrival and the skew carry every form at once, which no scenario does,
// so that each of their fields is written).
func fullResult(t *testing.T) *Result {
	t.Helper()
	hist := func(base int64) string {
		h := hdrhistogram.New(1, 60_000_000, 3)
		for i := range int64(200) {
			if err := h.RecordValue(base + i*i); err != nil {
				t.Fatal(err)
			}
		}
		s, err := EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	lat := load.Latency{P50: 181, P90: 240, P99: 512, P999: 1900, Max: 4100, Mean: 199.125}
	firstUS := int64(1_250_000)
	full := Entry{
		Algorithm: "my-limiter", Topology: "cluster", Custom: true, Shard: ShardBySubject, Call: "evalsha", StrictKeys: true,
		InProgress: true,
		Requests:   2000, Allowed: 980, Denied: 990, Errors: 20, Unknown: 10, Dropped: 3, Late: 7, LateFraction: 0.0035,
		DurationS: 10, OfferedRPS: 200.5, ThroughputRPS: 197,
		LatencyUS: lat, ServiceLatencyUS: load.Latency{P50: 150, P90: 200, P99: 400, P999: 900, Max: 3000, Mean: 160.5},
		Histograms: Histograms{Latency: hist(100), Service: hist(90)},
		Verification: verify.Summary{
			Verdict: verify.Fail, Reasons: []string{"2 definite violations", `threshold "p99 < 400us" broken: p99 = 512µs`},
			Contract: "token-bucket(5, 1/1s)", DefiniteViolations: 2, PossibleViolations: 5, WorstExcess: 3,
			Where: "subject s1 client c2, 8 permits where 5 were allowed, between 1.000s and 1.500s",
			Finding: "Admitted more than token-bucket(5, 1/1s) allows: 2 definite violations, the worst subject s1 client c2, " +
				"8 permits where 5 were allowed, between 1.000s and 1.500s.",
			Pressure:          &verify.Pressure{Windows: 40, Full: 12, FullShare: 0.3, Denials: 35, Crossings: 9, Pressed: true},
			ExpectedViolation: true, MayViolate: true,
			Thresholds: []verify.ThresholdCheck{
				{Threshold: "p99 < 400us", Status: verify.ThresholdBroken, Value: 512, Shown: "512µs"},
				{Threshold: "errors <= 1%", Status: verify.ThresholdBroken, Value: 0.015, Shown: "0.015", Default: true},
				{Threshold: "my-limiter: efficiency > 0.9", Status: verify.ThresholdUnevaluated, Shown: "no contract"},
			},
			ViolationTimesS: []float64{1.25, 7.5}, ViolationTimesOmitted: 4,
			Disruptions: []verify.DisruptionReport{{Node: "127.0.0.1:7000", Kind: "restarted",
				What: "127.0.0.1:7000 restarted (run id 4f2a1b2c → 9c1e0d3f) (seen at 4.512s)", FromS: 4.41, ToS: 4.513, StateLost: true}},
			Epochs: 2, AttributedViolations: 57, Unplaced: 12,
			Faults: []verify.FaultReport{{Name: "restart master at 4.4s", Kind: "restart", Target: "master", Nodes: []string{"127.0.0.1:7000"},
				FromS: 4.4, ToS: 4.513, UntilS: 5.513, Error: "127.0.0.1:7001: not started", StateLost: true,
				StateLoss: "127.0.0.1:7000 restarted (run id 4f2a1b2c → 9c1e0d3f) (seen at 4.512s)", Violations: 57, Excess: 48,
				Omitted: 3, Unknown: 10, Failed: 20, NoScript: 7, BackAfterS: 0.089}},
			FaultExcess: 48, OutsideFaultErrors: 2,
		},
		ErrorClasses: []load.ErrorClass{
			{Kind: "connection lost", Outcome: "unknown", Count: 10, First: "my-limiter: EOF", FirstAtS: 4.43},
			{Kind: "connection refused", Outcome: "failed", Count: 20,
				First: "my-limiter: dial tcp 127.0.0.1:7000: connect: connection refused", FirstAtS: 4.44},
		},
		Watch: &watch.Summary{
			Nodes: []watch.NodeState{{Node: "127.0.0.1:7000", RoleBefore: "master", RoleAfter: "master",
				RunIDBefore: "4f2a1b2c5e", RunIDAfter: "9c1e0d3f7a", UptimeBeforeS: 12, UptimeAfterS: 5, LastError: "timeout"}},
			Events: []watch.EventRecord{{Node: "127.0.0.1:7000", Kind: watch.EventRestarted, AfterS: 4.41, AtS: 4.512,
				From: "4f2a1b2c5e", To: "9c1e0d3f7a", Role: "master", StateLost: true}},
			Polls: 105, IntervalMS: 100,
		},
		Warnings: []Warning{{Kind: WarningKeysLeft, Message: "12 keys under limitbench:ab12cd34:my-limiter:1: were left behind",
			Prefix: "limitbench:ab12cd34:my-limiter:1:", Keys: 12,
			Remove: "redis-cli -h 127.0.0.1 -p 7000 --user USER --scan --pattern 'limitbench:ab12cd34:my-limiter:1:*' | xargs -r -n 500 redis-cli -h 127.0.0.1 -p 7000 --user USER unlink"}},
		Accuracy: verify.AccuracySummary{IdealAllowed: 1000, Efficiency: 0.98, FalseDenials: 20, MaxWindowRatio: 1.6},
		Fairness: &verify.Fairness{Subjects: 2, Clients: []verify.ClientShare{
			{Client: "c0", Offered: 1200, Admitted: 700, Share: 0.714, Fair: 0.5},
			{Client: "c1", Offered: 800, Admitted: 280, Share: 0.286, Fair: 0.5}},
			ClientsOmitted: 1, Jain: 0.84, JainMin: 0.79, JainMinSubject: "s1",
			Starved: &verify.Starvation{Client: "c1", Subject: "s1", Denials: 17, FromS: 2.5, ToS: 3.25}},
		Server: Server{USecPerCall: 4.125, CPUUSecPerDecision: 6.5, BytesPerKey: 96, Keys: 150},
		Timeline: Timeline{Series: load.Series{BinS: 0.5, Offered: []int64{100, 101}, Admitted: []int64{50, 49}, Denied: []int64{48, 50}, Errors: []int64{2, 2}}, Limit: []float64{50, 52.5},
			Use: []verify.WindowUse{{Contract: "token-bucket(5, 1/1s)", Measure: "the most tokens the bucket of one subject and client had drawn and not yet refilled",
				Allowance: 5, Held: []float64{5, 7.5}}}},
		Excerpt: &verify.Excerpt{Violation: "definite", Contract: "token-bucket(5, 1/1s) per subject+client", Kind: algorithms.TokenBucket,
			Limit: 5, WindowUS: 1_000_000, Capacity: 5, RefillPermits: 1, RefillPerUS: 1_000_000, GranularityUS: 1000,
			Scope: "subject+client", Subject: "s1", Client: "c2", FromUS: 1_000_000, ToUS: 1_500_000, Permits: 8, Allowed: 5,
			FirstUS: &firstUS, SpanFromUS: -4_000_000, SpanToUS: 6_500_000, Lanes: []string{"c0", "c2"}, LaneClients: []int{0, 2},
			Requests: []verify.ExcerptRequest{{Lane: 1, Lo: 1_000_000, Hi: 1_000_250, K: "a", Permits: 1, S: true}},
			Omitted:  2, CountPartial: true},
		Samples: []Sample{
			{Repeat: 1, ThroughputRPS: 196, LatencyUS: lat, Efficiency: 0.97, USecPerCall: 4, CPUUSecPerDecision: 6.25, BytesPerKey: 95, Verdict: verify.Pass},
			{Repeat: 2, ThroughputRPS: 198, LatencyUS: lat, Efficiency: 0.99, USecPerCall: 4.25, CPUUSecPerDecision: 6.75, BytesPerKey: 97, Verdict: verify.Fail},
		},
		Relative: &Relative{Reference: "reference", Throughput: 0.95, P50: 1.2, P99: 1.4, USecPerCall: 2.1, CPUUSecPerDecision: 1.9, BytesPerKey: 3},
		Files: Files{Histogram: "my-limiter-cluster.hgrm", ServiceHistogram: "my-limiter-cluster-service.hgrm",
			Accuracy: []string{"accuracy-my-limiter-cluster.png", "accuracy-my-limiter-cluster.svg"}},
	}
	waitShort := int64(3)
	ref := Entry{
		Algorithm: "reference", Topology: "cluster", Requests: 2000, Allowed: 2000, DurationS: 10, OfferedRPS: 200.5,
		ThroughputRPS: 200, LatencyUS: lat, ServiceLatencyUS: lat, Histograms: Histograms{Latency: hist(80)},
		Verification: verify.Summary{Verdict: verify.Inconclusive, Reasons: []string{"no contract: nothing was verified"}, Contract: "none"},
		Server:       Server{USecPerCall: 2, CPUUSecPerDecision: 3.5, BytesPerKey: 32, Keys: 1000},
		Timeline:     Timeline{Series: load.Series{BinS: 0.5, Offered: []int64{100}, Admitted: []int64{100}, Denied: []int64{0}, Errors: []int64{0}}},
		Files:        Files{Histogram: "reference-cluster.hgrm"},
		WaitShort:    &waitShort,
		// A segment's part (in a real result, with Result.Segment, not with Generators).
		Partial: &Partial{
			Counts: load.Counts{Requests: 2000, Allowed: 2000, Denied: 1, Failed: 2, Unknown: 3, AllowedPermits: 2000, Late: 4, Missed: 5,
				Warmup: 6, Clamped: 7, Dropped: 8, Narrowed: 9, ClockMismatch: 10, WaitShort: 11},
			Scheduled: 2005, DurationNS: 10e9, WarmupNS: 5e8, BinNS: 5e8, Canceled: true, Behind: true,
			Histograms: []byte("lbhg"), Timeline: []byte("lbtl"), Errors: []byte("lber"),
			Log: "reference-cluster.alog", WarmupLog: "reference-cluster-warmup.alog",
			MeasuredFromUS: 1_790_000_000_500_000, ClockOffsetUS: -1500.25, ClockErrorUS: 6.5, LateStartMS: 12.5, Arrived: 3,
		},
	}
	return &Result{
		Schema: SchemaVersion,
		Scenario: Scenario{
			Name: "full", Description: "Every section of result.json.", File: "scenarios/full.yaml", Seed: 7,
			Topologies: []string{"single", "cluster"},
			Settings: &Settings{
				Limit: algorithms.Limit{Limit: 20, Window: 2 * time.Second, Burst: 30, ConsumerLimit: 10},
				Cost:  2, WarmupS: 0.5, DurationS: 10, Clients: 8, ClientMode: load.ModePipeline, PipelineDepth: 4,
				Arrival: &arrival.Arrival{Rate: 250, Ramp: &arrival.Ramp{From: 10, To: 400},
					Steps: []arrival.Step{{For: time.Second, Rate: 100}, {For: 2 * time.Second, Rate: 300}},
					Spike: &arrival.Spike{Base: 50, Peak: 500, At: 1900 * time.Millisecond, For: 200 * time.Millisecond, Every: 2 * time.Second},
					Align: arrival.Align{Every: time.Second, Offset: 900 * time.Millisecond}},
				Keys:       load.Keys{Count: 10, Distribution: load.Zipf, ZipfS: 1.2, HotShare: 0.5},
				ClockSkew:  load.Skew{Offsets: []time.Duration{0, 1500 * time.Millisecond}, Spread: 2 * time.Second},
				Algorithms: []string{"gcra", "my-limiter"},
				Custom: []algorithms.CustomSpec{{Name: "my-limiter", Script: "my_limiter.lua", Keys: []string{"rl:{{tag}}:tokens", "rl:{{tag}}:ts"},
					Args:     []string{"{{rate}}", "{{burst}}", "{{now_s}}", "{{cost}}"},
					Allowed:  algorithms.ReplyRule{Element: 1, Op: algorithms.RuleEquals, Value: "1"},
					Contract: algorithms.Contract{Kind: algorithms.TokenBucket, Capacity: 5, RefillPermits: 1, RefillPer: time.Second}}},
				Expect:      Expect{Violations: []string{"my-limiter"}, MayViolate: []string{"gcra"}},
				SpeedOnly:   SpeedOnly{"gcra"},
				Thresholds:  []string{"p99 < 400us", "my-limiter: efficiency > 0.9"},
				Persistence: "aof-always", Faults: []string{"restart master at 4.4s, recovery 1s"},
				Wait: &algorithms.Wait{Replicas: 1, Timeout: 50 * time.Millisecond},
			},
		},
		Environment: Environment{Backend: "container", Topology: "single,cluster", Image: "redis:7.4", RedisVersion: "7.4.1",
			Nodes: 6, CPUs: 4, GOMAXPROCS: 3, GOMAXPROCSNote: "load generator on GOMAXPROCS 3: --procs (6 local redis-server(s))",
			LocalServers: 6, IdleNote: "held awake while the command runs (wake-up latency limit 0 µs)", PinNote: "redis-servers pinned to CPU(s) [3], the load generator to [0 1 2]", GoVersion: "go1.26.0", HarnessVersion: "v1.2.3",
			HarnessCommit: "0123456789abcdef0123456789abcdef01234567", HarnessDate: "2026-01-02T03:04:05Z", OS: "linux", Arch: "amd64"},
		StartedAt: start, FinishedAt: start.Add(95 * time.Second),
		CutShort: true, CutShortNote: "interrupted: the results cover what was measured before the signal",
		Reference: "reference",
		Entries:   []Entry{full, ref},
		Segment: &Segment{RunID: "run-001", Index: 1, Count: 3, ScenarioHash: "5b3cfbff", Start: "barrier", TestClockOffsetUS: 150000,
			Servers: []SegmentServer{{Addr: "10.0.0.5:6379", RunID: "4f2a1b2c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"}}},
		Generators: []Generator{{Segment: 2, Requests: 1000, ThroughputRPS: 99.5, Late: 2, LateFraction: 0.002, LateStartMS: 1.5,
			ClockOffsetUS: -1500.25, ClockErrorUS: 6.5}},
		MergedFrom:      []string{"results/run-001/segment-0"},
		MissingSegments: []string{"2/3"},
		Shard:           &Shard{Index: 1, Count: 4, Hash: "fnv1a-64"}, JoinedShards: 4,
		Sequential: &Sequential{Rule: "pocock-type alpha spending over the time budget, a look whenever the rounds have grown by half", Alpha: 0.01,
			BudgetS: 600, Baseline: "results/main", Topologies: []SequentialTopology{{Topology: "cluster", Rounds: 9, Looks: 4,
				ElapsedS: 412.5, Spent: 0.0061, Level: 0.0012, Decided: false, Undecided: []string{"my-limiter p99 (MDE 18.2% > 15%)"}},
				{Topology: "single", Rounds: 6, Looks: 1, ElapsedS: 95, Level: 0.0031, Decided: true}}},
		Files: RunFiles{Result: FileName, Markdown: "report.md", HTML: "report.html",
			Plots:      []string{"latency-cluster.png", "latency-cluster.svg"},
			Histograms: []string{"my-limiter-cluster.hgrm", "my-limiter-cluster-service.hgrm", "reference-cluster.hgrm"}},
	}
}

// TestFullResultGolden: a result with every section populated is written as
// testdata/full-result.json byte for byte, and that file read back and written again gives the
// same bytes, so the schema's field names, order and units are those of limitbench/result/v1.
func TestFullResultGolden(t *testing.T) {
	dir := t.TempDir()
	if err := fullResult(t).Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, fullResultGolden, got)

	r, err := Read(fullResultGolden)
	if err != nil {
		t.Fatal(err)
	}
	checkPopulated(t, []reflect.Value{reflect.ValueOf(*r)}, "result")
	again := t.TempDir()
	if err := r.Write(again); err != nil {
		t.Fatal(err)
	}
	round, err := os.ReadFile(filepath.Join(again, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(round, got) {
		t.Errorf("%s read and written again differs:\n%s", fullResultGolden, golden.FirstDiff(got, round))
	}
}

// checkPopulated fails t for every field under vs that is zero in every instance (every element of
// every slice on the way), so that the golden file really holds every field of the schema. A
// value with its own JSON encoding is checked as a whole.
func checkPopulated(t *testing.T, vs []reflect.Value, path string) {
	t.Helper()
	if len(vs) == 0 {
		return
	}
	typ := vs[0].Type()
	marshaler := reflect.TypeFor[json.Marshaler]()
	switch {
	case typ.Kind() == reflect.Pointer:
		var elems []reflect.Value
		for _, v := range vs {
			if !v.IsNil() {
				elems = append(elems, v.Elem())
			}
		}
		if len(elems) == 0 {
			t.Errorf("%s is nil everywhere", path)
		}
		checkPopulated(t, elems, path)
	case typ.Kind() == reflect.Slice:
		var elems []reflect.Value
		for _, v := range vs {
			for i := range v.Len() {
				elems = append(elems, v.Index(i))
			}
		}
		if len(elems) == 0 {
			t.Errorf("%s is empty everywhere", path)
		}
		checkPopulated(t, elems, path+"[*]")
	case typ.Kind() == reflect.Struct && typ != reflect.TypeFor[time.Time]() && !typ.Implements(marshaler):
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			var set []reflect.Value
			for _, v := range vs {
				if fv := v.Field(i); !fv.IsZero() {
					set = append(set, fv)
				}
			}
			if len(set) == 0 {
				t.Errorf("%s.%s is zero everywhere", path, f.Name)
				continue
			}
			checkPopulated(t, set, path+"."+f.Name)
		}
	}
}
