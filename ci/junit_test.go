package ci

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// entry returns an entry of alg on single with verification v and some figures.
func entry(alg string, v verify.Summary) result.Entry {
	if v.Contract == "" {
		v.Contract = "sliding-window(100, 1s)"
	}
	return result.Entry{Algorithm: alg, Topology: "single", Requests: 1000, Allowed: 600, Denied: 400, DurationS: 2,
		ThroughputRPS: 500, LatencyUS: latency(900), Verification: v,
		Accuracy: verify.AccuracySummary{IdealAllowed: 600, Efficiency: 1}, Server: result.Server{CPUUSecPerDecision: 12.5, BytesPerKey: 80}}
}

// mixedResult is a result with an entry of every verdict-table label, the reference script, and
// an expected violation whose algorithm was not run.
func mixedResult() *result.Result {
	fail := verify.Summary{Verdict: verify.Fail, DefiniteViolations: 3, WorstExcess: 2, Where: `for subject "k1" in [0s, 1s]`,
		Reasons: []string{"3 definite violations of sliding-window(100, 1s)"}}
	caught := fail
	caught.ExpectedViolation = true
	tolerated := fail
	tolerated.MayViolate = true
	threshold := verify.Summary{Verdict: verify.Pass}
	threshold.AddThreshold(verify.ThresholdCheck{Threshold: "p99 < 5ms", Status: verify.ThresholdBroken, Value: 9000, Shown: "9ms"},
		`threshold "p99 < 5ms" broken: p99 = 9ms`)
	r := &result.Result{Schema: result.SchemaVersion, Reference: "reference",
		Scenario: result.Scenario{Name: "mixed", File: "scenarios/mixed.yaml", Settings: &result.Settings{
			Expect: result.Expect{Violations: []string{"caught", "missed", "not-run"}, MayViolate: []string{"tolerated"}}}},
		Entries: []result.Entry{
			entry("good", verify.Summary{Verdict: verify.Pass}),
			entry("bad", fail),
			entry("caught", caught),
			entry("missed", verify.Summary{Verdict: verify.Pass, ExpectedViolation: true}),
			entry("tolerated", tolerated),
			entry("slow", threshold),
			entry("unsure", verify.Summary{Verdict: verify.Inconclusive, Reasons: []string{"the load generator fell behind its schedule"}}),
			entry("counter", verify.Summary{Verdict: verify.Inconclusive, Contract: "none", Reasons: []string{"no contract: nothing was verified"}}),
			entry("reference", verify.Summary{Verdict: verify.Inconclusive, Contract: "none"}),
		}}
	return r
}

// wantCounts counts what a result's JUnit report must hold, from the result alone: a testcase
// per entry but the reference and per expected algorithm without an entry (a failure); failures
// for fail and missed, errors for inconclusive with a contract, skips for caught, tolerated and
// inconclusive without a contract.
func wantCounts(r *result.Result) (tests, failures, errs, skipped int) {
	seen := map[string]bool{}
	for i := range r.Entries {
		e := &r.Entries[i]
		if r.IsReference(e) {
			continue
		}
		seen[e.Algorithm] = true
		tests++
		switch l := e.Label(); l {
		case "fail", result.LabelMissed:
			failures++
		case result.LabelCaught, result.LabelTolerated:
			skipped++
		case "inconclusive":
			if e.Verification.Contract == "none" {
				skipped++
			} else {
				errs++
			}
		}
	}
	if st := r.Scenario.Settings; st != nil && !r.CutShort {
		for _, n := range st.Expect.Violations {
			if !seen[n] {
				seen[n] = true
				tests++
				failures++
			}
		}
	}
	return
}

// writeJUnit writes j into a file under t's temporary directory, validates it against the
// schema with xmllint, parses it back and checks that it reads back as j; it returns the parse.
func writeJUnit(t *testing.T, j *JUnit) *JUnit {
	t.Helper()
	var b bytes.Buffer
	if err := j.Write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	validateSchema(t, path)
	var back JUnit
	if err := xml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("parse the JUnit back: %v\n%s", err, b.String())
	}
	back.XMLName = j.XMLName
	if diff := cmp.Diff(*j, back, cmp.Comparer(func(a, b Seconds) bool { return int64(a*1000+0.5) == int64(b*1000+0.5) })); diff != "" {
		t.Errorf("JUnit read back differs (-written +read):\n%s", diff)
	}
	return &back
}

// validateSchema validates the XML file at path against testdata/junit.xsd with xmllint; it skips
// t, saying why, without xmllint.
func validateSchema(t *testing.T, path string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skipf("xmllint is not on PATH (Debian: apt-get install libxml2-utils), so the JUnit schema is not checked: %v", err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), path).CombinedOutput()
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("xmllint --schema testdata/junit.xsd: %v\n%s\nthe file:\n%s", err, out, b)
	}
}

func TestJUnitRunCounts(t *testing.T) {
	full, err := result.Read(filepath.Join("..", "result", "testdata", "full-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	cut := mixedResult()
	cut.CutShort, cut.CutShortNote = true, "interrupted"
	for _, tt := range []struct {
		name  string
		r     *result.Result
		fixed [4]int // the counts written out, where known
	}{
		// 8 entries and not-run; bad, missed, slow, not-run fail; unsure errs; caught,
		// tolerated, counter skip.
		{"every label", mixedResult(), [4]int{9, 4, 1, 3}},
		{"cut short", cut, [4]int{8, 3, 1, 3}},
		{"result/testdata/full-result.json", full, [4]int{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var j JUnit
			j.Add(RunSuites(tt.r)...)
			back := writeJUnit(t, &j)
			tests, failures, errs, skipped := wantCounts(tt.r)
			got := [4]int{back.Tests, back.Failures, back.Errors, back.Skipped}
			if want := [4]int{tests, failures, errs, skipped}; got != want {
				t.Errorf("JUnit counts (tests, failures, errors, skipped) = %v; want %v from result.json", got, want)
			}
			if tt.fixed != [4]int{} && got != tt.fixed {
				t.Errorf("JUnit counts (tests, failures, errors, skipped) = %v; want %v", got, tt.fixed)
			}
			var n [4]int
			for _, s := range back.Suites {
				for _, c := range s.Cases {
					n[0]++
					switch {
					case c.Failure != nil:
						n[1]++
					case c.Error != nil:
						n[2]++
					case c.Skipped != nil:
						n[3]++
					}
				}
			}
			if n != got {
				t.Errorf("testcases counted (tests, failures, errors, skipped) = %v; the attributes say %v", n, got)
			}
		})
	}
}

// TestJUnitRunOutcomes: each label gets the outcome the package documentation gives it, with its
// finding as the message and the entry's figures as the suite's properties.
func TestJUnitRunOutcomes(t *testing.T) {
	r := mixedResult()
	byName := map[string]Suite{}
	for _, s := range RunSuites(r) {
		byName[s.Cases[0].Name] = s
	}
	for _, tt := range []struct {
		name, outcome, message string
	}{
		{"good on single", "pass", ""},
		{"bad on single", "failure", "fail: 3 definite violations of sliding-window(100, 1s)"},
		{"caught on single", "skipped", "expected violation caught: 3 definite violations of sliding-window(100, 1s), as the scenario allows"},
		{"missed on single", "failure", "expected violation missed: no definite violation was found"},
		{"tolerated on single", "skipped", "fail (tolerated): 3 definite violations"},
		{"slow on single", "failure", `fail: threshold "p99 < 5ms" broken: p99 = 9ms`},
		{"unsure on single", "error", "inconclusive: the load generator fell behind its schedule"},
		{"counter on single", "skipped", "no contract: nothing was verified"},
		{"not-run", "failure", "not-run: expected to be flagged with a definite violation, but the algorithm was not run"},
	} {
		s, ok := byName[tt.name]
		if !ok {
			t.Errorf("no testcase %q", tt.name)
			continue
		}
		c := s.Cases[0]
		outcome, o := "pass", (*Outcome)(nil)
		switch {
		case c.Failure != nil:
			outcome, o = "failure", c.Failure
		case c.Error != nil:
			outcome, o = "error", c.Error
		case c.Skipped != nil:
			outcome, o = "skipped", c.Skipped
		}
		if outcome != tt.outcome {
			t.Errorf("%s: outcome %s; want %s", tt.name, outcome, tt.outcome)
		}
		if o != nil && !strings.HasPrefix(o.Message, tt.message) {
			t.Errorf("%s: message %q; want it to start with %q", tt.name, o.Message, tt.message)
		}
		if o != nil && tt.name != "not-run" && o.Text == "" {
			t.Errorf("%s: no findings in the text", tt.name)
		}
	}
	if _, ok := byName["reference on single"]; ok {
		t.Error("the reference script is a testcase; it is calibration, not verified")
	}
	props := map[string]string{}
	for _, p := range byName["bad on single"].Properties {
		props[p.Name] = p.Value
	}
	for k, want := range map[string]string{"throughput_rps": "500", "latency_p99_us": "900", "definite_violations": "3",
		"redis_cpu_us_per_decision": "12.5", "bytes_per_subject": "80", "efficiency": "1", "verdict": "fail"} {
		if props[k] != want {
			t.Errorf("property %s = %q; want %q (all: %v)", k, props[k], want, props)
		}
	}
}

// TestJUnitGate: a gate report's rows, one testcase each; the rows that fail the gate are
// failures, other inconclusive rows skipped, and the counts match the report's.
func TestJUnitGate(t *testing.T) {
	for _, tt := range []struct {
		base, cur string
		policy    gate.Policy
	}{
		{"baseline", "current-slower", gate.DefaultPolicy()},
		{"baseline", "current-failed", gate.DefaultPolicy()},
		{"baseline-noisy", "current-noisy-same", gate.DefaultPolicy()},
		{"baseline-noisy", "current-noisy-same", gate.Policy{Thresholds: gate.DefaultThresholds(), FailInconclusive: true}},
	} {
		t.Run(tt.cur+map[bool]string{true: " fail-inconclusive"}[tt.policy.FailInconclusive], func(t *testing.T) {
			g, err := gate.Compare(gateFixture(t, tt.base), gateFixture(t, tt.cur), tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			var j JUnit
			j.Add(GateSuites(g)...)
			back := writeJUnit(t, &j)
			wantFail, wantSkip := 0, 0
			for _, r := range g.Rows {
				switch {
				case g.Policy.Fails(r.Verdict):
					wantFail++
				case r.Verdict == gate.Inconclusive:
					wantSkip++
				}
			}
			got := [4]int{back.Tests, back.Failures, back.Errors, back.Skipped}
			if want := [4]int{len(g.Rows), wantFail, 0, wantSkip}; got != want {
				t.Errorf("JUnit counts (tests, failures, errors, skipped) = %v; want %v from the gate's rows", got, want)
			}
			if g.Failed != (back.Failures > 0) {
				t.Errorf("gate failed = %v, but the JUnit has %d failures", g.Failed, back.Failures)
			}
		})
	}
}

// TestJUnitHunt: testdata's hunt (fixed-window-published broken, token-bucket held), as the
// scenario expects it and as it does not.
func TestJUnitHunt(t *testing.T) {
	h := huntFixture(t)
	expected := *h
	expected.Entries = append([]hunt.Entry(nil), h.Entries...)
	expected.Entries[0].ExpectedViolation = true
	for _, tt := range []struct {
		name      string
		f         *hunt.File
		mustBreak []string
		want      [4]int // tests, failures, errors, skipped
	}{
		{"unexpected violation", h, nil, [4]int{2, 1, 0, 0}},
		{"expected violation", &expected, []string{"fixed-window-published"}, [4]int{2, 0, 0, 1}},
		{"expected violation, and token-bucket must break", &expected, []string{"fixed-window-published", "token-bucket"}, [4]int{2, 1, 0, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var j JUnit
			j.Add(HuntSuites(tt.f, "demo", tt.mustBreak)...)
			back := writeJUnit(t, &j)
			if got := [4]int{back.Tests, back.Failures, back.Errors, back.Skipped}; got != tt.want {
				t.Errorf("JUnit counts (tests, failures, errors, skipped) = %v; want %v", got, tt.want)
			}
		})
	}
}

// latency returns a latency summary whose p99 is p99 µs.
func latency(p99 float64) load.Latency {
	return load.Latency{P50: p99 / 3, P90: p99 / 2, P99: p99, P999: p99 * 2, Max: p99 * 3, Mean: p99 / 3}
}

// TestJUnitSchemaRejects: the schema check can fail: documents that break the Jenkins/Ant form
// are rejected.
func TestJUnitSchemaRejects(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skipf("xmllint is not on PATH (Debian: apt-get install libxml2-utils): %v", err)
	}
	for name, doc := range map[string]string{
		"two outcomes":         `<testsuites><testsuite name="s" tests="1" failures="1" errors="0"><testcase name="c" classname="k"><failure message="m"/><skipped/></testcase></testsuite></testsuites>`,
		"suite without a name": `<testsuites><testsuite tests="0" failures="0" errors="0"/></testsuites>`,
		"negative count":       `<testsuites><testsuite name="s" tests="-1" failures="0" errors="0"/></testsuites>`,
		"testcase properties":  `<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase name="c" classname="k"><properties/></testcase></testsuite></testsuites>`,
	} {
		path := filepath.Join(t.TempDir(), "bad.xml")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), path).CombinedOutput(); err == nil {
			t.Errorf("%s: xmllint accepted %s\n%s", name, doc, out)
		}
	}
}

// gateFixture reads gate/testdata/<name>/result.json.
func gateFixture(t *testing.T, name string) *result.Result {
	t.Helper()
	r, err := result.Read(filepath.Join("..", "gate", "testdata", name, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// huntFixture reads hunt/testdata/hunt.json: fixed-window-published broken, token-bucket held.
func huntFixture(t *testing.T) *hunt.File {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "hunt", "testdata", "hunt.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := hunt.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
