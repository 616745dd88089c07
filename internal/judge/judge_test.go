package judge

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// thresholds parses ts, failing the test on a bad one.
func thresholds(t *testing.T, ts ...string) []scenarios.Threshold {
	t.Helper()
	var out []scenarios.Threshold
	for _, s := range ts {
		th, err := scenarios.ParseThreshold(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, th)
	}
	return out
}

// measured returns an entry of alg on single with a pass verdict and figures for every metric:
// 1000 requests (10 errors), p99 4ms, 500/s, efficiency 0.95 of 400 ideal admissions.
func measured(alg string) result.Entry {
	return result.Entry{
		Algorithm: alg, Topology: "single", Requests: 1000, Allowed: 380, Denied: 610, Errors: 10, DurationS: 2,
		ThroughputRPS: 495, LatencyUS: load.Latency{P50: 800, P90: 2000, P99: 4000, P999: 6000, Max: 9000, Mean: 1000},
		Verification: verify.Summary{Verdict: verify.Pass, Contract: "sliding-window(100, 1s)"},
		Accuracy:     verify.AccuracySummary{IdealAllowed: 400, Efficiency: 0.95},
	}
}

// Issue 14, item 3: a run dominated by errors no longer passes. Without an errors threshold of
// its own, every entry is held to DefaultErrors: broken, a pass becomes inconclusive (never
// fail) and the run fails with the error classes and their first texts; a fail stays a fail. A
// scenario's errors threshold, for all algorithms or for one, replaces the default and fails
// the verdict when it breaks.
func TestJudgeDefaultErrors(t *testing.T) {
	oom := load.ErrorClass{Kind: "OOM", Outcome: "failed", Count: 590,
		First: "gcra: OOM command not allowed when used memory > 'maxmemory'.", FirstAtS: 0.4}
	dominated := func(alg string) result.Entry {
		e := measured(alg)
		e.Allowed, e.Denied, e.Errors = 100, 310, 590
		e.ErrorClasses = []load.ErrorClass{oom}
		return e
	}
	failing := dominated("sliding-log")
	failing.Verification.Verdict, failing.Verification.DefiniteViolations = verify.Fail, 3
	empty := result.Entry{Algorithm: "idle", Topology: "single", Verification: verify.Summary{Verdict: verify.Inconclusive}}
	tests := []struct {
		name       string
		thresholds []string
		e          result.Entry
		verdict    verify.Verdict
		fail       string // substring of the one failure about errors; "" for none
		check      verify.ThresholdCheck
	}{
		{"few errors pass", nil, measured("gcra"), verify.Pass, "",
			verify.ThresholdCheck{Threshold: "errors <= 1%", Status: verify.ThresholdHeld, Value: 0.01, Shown: "0.01", Default: true}},
		{"dominated by errors", nil, dominated("gcra"), verify.Inconclusive,
			`gcra-single: default threshold "errors <= 1%" (set an errors threshold to change it) broken: errors = 0.59; 590 OOM (failed; first: "gcra: OOM command not allowed when used memory > 'maxmemory'.")`,
			verify.ThresholdCheck{Threshold: "errors <= 1%", Status: verify.ThresholdBroken, Value: 0.59, Shown: "0.59", Default: true}},
		{"a fail stays a fail", nil, failing, verify.Fail, "broken: errors = 0.59",
			verify.ThresholdCheck{Threshold: "errors <= 1%", Status: verify.ThresholdBroken, Value: 0.59, Shown: "0.59", Default: true}},
		{"own threshold for all replaces it", []string{"errors < 60%"}, dominated("gcra"), verify.Pass, "",
			verify.ThresholdCheck{Threshold: "errors < 60%", Status: verify.ThresholdHeld, Value: 0.59, Shown: "0.59"}},
		{"own threshold breaks: fail", []string{"gcra: errors < 10%"}, dominated("gcra"), verify.Fail, `threshold "gcra: errors < 10%" broken`,
			verify.ThresholdCheck{Threshold: "gcra: errors < 10%", Status: verify.ThresholdBroken, Value: 0.59, Shown: "0.59"}},
		{"another algorithm's threshold does not replace it", []string{"gcra: errors < 60%"}, dominated("token-bucket"), verify.Inconclusive,
			"default threshold", verify.ThresholdCheck{Threshold: "errors <= 1%", Status: verify.ThresholdBroken, Value: 0.59, Shown: "0.59", Default: true}},
		{"nothing measured: no default", nil, empty, verify.Inconclusive, "", verify.ThresholdCheck{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scenarios.Default()
			s.Thresholds = thresholds(t, tt.thresholds...)
			res := &result.Result{Entries: []result.Entry{tt.e}}
			fails := Run(s, res)
			v := res.Entries[0].Verification
			errFails := 0
			found := false
			for _, f := range fails {
				if strings.Contains(f, "errors") {
					errFails++
				}
				found = found || tt.fail != "" && strings.Contains(f, tt.fail)
			}
			if tt.fail == "" && errFails > 0 || tt.fail != "" && (errFails != 1 || !found) {
				t.Errorf("failures %q; want one about errors with %q", fails, tt.fail)
			}
			if v.Verdict != tt.verdict {
				t.Errorf("verdict %s (%q); want %s", v.Verdict, v.Reasons, tt.verdict)
			}
			var got verify.ThresholdCheck
			for _, c := range v.Thresholds {
				if strings.Contains(c.Threshold, "errors") {
					got = c
				}
			}
			if diff := cmp.Diff(tt.check, got); diff != "" {
				t.Errorf("errors threshold check (-want +got):\n%s", diff)
			}
			if want := tt.check.Default && tt.check.Status == verify.ThresholdBroken; res.Entries[0].Label() == "fail" && want && tt.verdict != verify.Fail {
				t.Errorf("label fail for a broken default threshold")
			}
		})
	}
}

func TestJudgeThresholds(t *testing.T) {
	s := scenarios.Default()
	s.Name = "judge"
	s.Expect = result.Expect{Violations: []string{"fixed-window-published"}, MayViolate: []string{"sliding-log-published"}}
	s.Thresholds = thresholds(t, "p99 < 5ms", "gcra: efficiency > 0.9", "sliding-log: p99 < 3ms", "mine: efficiency > 0.5")

	caught := measured("fixed-window-published")
	caught.Verification.Verdict, caught.Verification.DefiniteViolations = verify.Fail, 4
	tolerated := measured("sliding-log-published")
	tolerated.Verification.Verdict, tolerated.Verification.DefiniteViolations = verify.Fail, 2
	mine := measured("mine") // no contract: efficiency cannot be evaluated
	mine.Verification.Contract, mine.Accuracy = "none", verify.AccuracySummary{}
	ref := measured("reference")
	ref.LatencyUS.P99 = 50_000 // the reference is not judged
	res := &result.Result{Reference: "reference", Entries: []result.Entry{
		measured("gcra"), measured("sliding-log"), caught, tolerated, mine, ref,
	}}
	fails := Run(s, res)

	wantFails := []string{
		`sliding-log-single: threshold "sliding-log: p99 < 3ms" broken: p99 = 4ms`,
		`mine-single: threshold "mine: efficiency > 0.5" cannot be evaluated: the algorithm has no contract, so there is no exact limiter to compare with`,
	}
	if diff := cmp.Diff(wantFails, fails); diff != "" {
		t.Errorf("judge failures (-want +got):\n%s", diff)
	}
	want := map[string]struct {
		verdict verify.Verdict
		outcome string
		checks  []verify.ThresholdStatus
	}{
		// The last check of each is the default errors threshold (1% of 1000 requests failed).
		"gcra":                   {verify.Pass, "pass", []verify.ThresholdStatus{verify.ThresholdHeld, verify.ThresholdHeld, verify.ThresholdHeld}},
		"sliding-log":            {verify.Fail, "fail", []verify.ThresholdStatus{verify.ThresholdHeld, verify.ThresholdBroken, verify.ThresholdHeld}},
		"fixed-window-published": {verify.Fail, result.LabelCaught, []verify.ThresholdStatus{verify.ThresholdHeld, verify.ThresholdHeld}},
		"sliding-log-published":  {verify.Fail, result.LabelTolerated, []verify.ThresholdStatus{verify.ThresholdHeld, verify.ThresholdHeld}},
		"mine":                   {verify.Inconclusive, "inconclusive", []verify.ThresholdStatus{verify.ThresholdHeld, verify.ThresholdUnevaluated, verify.ThresholdHeld}},
		"reference":              {verify.Pass, result.LabelReference, nil},
	}
	for i := range res.Entries {
		e := &res.Entries[i]
		w := want[e.Algorithm]
		var got []verify.ThresholdStatus
		for _, c := range e.Verification.Thresholds {
			got = append(got, c.Status)
		}
		if e.Verification.Verdict != w.verdict || res.LabelOf(e) != w.outcome || !cmp.Equal(got, w.checks) {
			t.Errorf("%s: verdict %s, outcome %q, thresholds %v; want %s, %q, %v", e.Algorithm, e.Verification.Verdict,
				res.LabelOf(e), got, w.verdict, w.outcome, w.checks)
		}
	}
	sl := res.Entries[1].Verification
	if !slices.Contains(sl.Reasons, `threshold "sliding-log: p99 < 3ms" broken: p99 = 4ms`) {
		t.Errorf("sliding-log reasons %q lack the broken threshold", sl.Reasons)
	}
	if c := sl.Thresholds[1]; c.Threshold != "sliding-log: p99 < 3ms" || c.Value != 4000 || c.Shown != "4ms" {
		t.Errorf("sliding-log threshold check = %+v; want the threshold as written, value 4000 (µs), shown 4ms", c)
	}
	if !res.Entries[3].Verification.MayViolate || !res.Entries[2].Verification.ExpectedViolation {
		t.Error("judge did not mark the expected and the tolerated violations")
	}
}

// TestJudgeThresholdOnExpectedViolation: a broken threshold fails the run and shows as "fail" even
// on an entry whose violation was expected or tolerated.
func TestJudgeThresholdOnExpectedViolation(t *testing.T) {
	s := scenarios.Default()
	s.Name = "judge"
	s.Expect = result.Expect{Violations: []string{"fixed-window-published"}, MayViolate: []string{"sliding-log-published"}}
	s.Thresholds = thresholds(t, "p99 < 1ms")
	caught := measured("fixed-window-published")
	caught.Verification.Verdict, caught.Verification.DefiniteViolations = verify.Fail, 4
	tolerated := measured("sliding-log-published")
	tolerated.Verification.Verdict, tolerated.Verification.DefiniteViolations = verify.Fail, 2
	res := &result.Result{Entries: []result.Entry{caught, tolerated}}
	if fails := Run(s, res); len(fails) != 2 {
		t.Errorf("judge = %q; want one broken threshold per entry", fails)
	}
	for i := range res.Entries {
		if got := res.Entries[i].Label(); got != "fail" {
			t.Errorf("%s: outcome %q with a broken threshold; want fail", res.Entries[i].Algorithm, got)
		}
	}
}

// Issue 19: in a measurement with injected faults, the default errors threshold counts only the
// errors outside the faults' windows (those inside are the faults' own); a scenario's fault_excess
// threshold fails an algorithm that over-admitted because of a fault.
func TestJudgeFaults(t *testing.T) {
	faulted := func(outside int64) result.Entry {
		e := measured("gcra")
		e.Errors, e.Unknown = 300, 100 // 40% of the requests, nearly all inside the faults' windows
		e.Verification.Faults = []verify.FaultReport{{Name: "restart master at 1s", Excess: 89, Failed: 300, Unknown: 100 - outside}}
		e.Verification.FaultExcess = 89
		e.Verification.OutsideFaultErrors = outside
		return e
	}
	tests := []struct {
		name       string
		thresholds []string
		e          result.Entry
		verdict    verify.Verdict
		fails      int
	}{
		{"errors inside the windows", nil, faulted(5), verify.Pass, 0},
		{"errors outside the windows", nil, faulted(50), verify.Inconclusive, 1},
		{"fault_excess held", []string{"fault_excess <= 100"}, faulted(0), verify.Pass, 0},
		{"fault_excess broken", []string{"gcra: fault_excess <= 0"}, faulted(0), verify.Fail, 1},
		{"another algorithm's fault_excess", []string{"token-bucket: fault_excess <= 0"}, faulted(0), verify.Pass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scenarios.Default()
			s.Thresholds = thresholds(t, tt.thresholds...)
			res := &result.Result{Entries: []result.Entry{tt.e}}
			fails := Run(s, res)
			if v := res.Entries[0].Verification; v.Verdict != tt.verdict || len(fails) != tt.fails {
				t.Errorf("verdict %s, failures %q; want %s and %d failure(s)", v.Verdict, fails, tt.verdict, tt.fails)
			}
		})
	}
}
