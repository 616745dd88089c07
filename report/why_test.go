package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/golden"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// flawedResult returns the demo's result with, on a topology of its own ("flawed"), one entry
// per built-in algorithm with a known flaw that failed with a definite violation (its excerpt
// holding the worst window, decided by clients with skewed clocks), and one published design
// the scenario expected to be flagged that was not.
func flawedResult(t *testing.T) *result.Result {
	t.Helper()
	r := readFixture(t, "demo-result.json")
	lim := r.Scenario.Settings.Limit
	for _, a := range algorithms.All() {
		d := a.Describe()
		if d.Flaw == "" {
			continue
		}
		c, err := a.Contract(lim)
		if err != nil {
			t.Fatal(err)
		}
		x := &verify.Excerpt{Violation: "definite", Contract: c.String(), Kind: c.Kind, Limit: c.Limit, WindowUS: c.Window.Microseconds(),
			Scope: c.Scope.String(), Subject: "s1", FromUS: 250_000, ToUS: 900_000, Permits: 31, Allowed: 20,
			Lanes: []string{"c0", "c1", "c2", "c4"}, LaneClients: []int{0, 1, 2, 4}}
		if c.Scope == algorithms.PerClient {
			x.Client = "c1"
		}
		for i := range 4 {
			x.Requests = append(x.Requests, verify.ExcerptRequest{Lane: i, Lo: 300_000 + int64(i)*1000, Hi: 301_000 + int64(i)*1000, K: "a", Permits: 1,
				S: c.Scope != algorithms.PerClient || i == 1})
		}
		r.Entries = append(r.Entries, result.Entry{Algorithm: d.Name, Topology: "flawed", Excerpt: x,
			Verification: verify.Summary{Verdict: verify.Fail, Contract: c.String(), DefiniteViolations: 3, WorstExcess: 11,
				Reasons: []string{"3 definite violations of " + c.String()}}})
	}
	r.Entries = append(r.Entries, result.Entry{Algorithm: "sliding-log-published", Topology: "missed",
		Verification: verify.Summary{Verdict: verify.Pass, Contract: "sliding-window(20, 1s, granularity 1ms)", ExpectedViolation: true}})
	return r
}

// TestWhyGolden (issue 31): the "why" of every entry of the demo that needs one (its
// expected violations, its passes with a worst window above the limit or possible violations:
// sliding-log-published's 300%, resource-consumer-published's 200%, its inconclusive entries),
// of every built-in flawed algorithm caught over-admitting, and of a planted bug missed, is
// testdata/why.txt.
func TestWhyGolden(t *testing.T) {
	r := flawedResult(t)
	var b strings.Builder
	for i := range r.Entries {
		e := &r.Entries[i]
		if why := Why(r, e); why != "" {
			fmt.Fprintf(&b, "== %s on %s: %s\n%s\n\n", e.Algorithm, e.Topology, e.Label(), why)
		}
	}
	golden.Check(t, filepath.Join("testdata", "why.txt"), []byte(b.String()))
}

// TestWhyCoversEveryNonPass: every entry that did not pass, but the reference script, has a why;
// a flawed algorithm's names its flaw, the skew that reaches a client-clock algorithm and the
// clients of its worst window; a plain pass has none.
func TestWhyCoversEveryNonPass(t *testing.T) {
	r := flawedResult(t)
	for i := range r.Entries {
		e := &r.Entries[i]
		why, label := Why(r, e), r.LabelOf(e)
		switch {
		case label == result.LabelReference:
			if why != "" {
				t.Errorf("%s: the reference script has a why: %q", e.Name(), why)
			}
		case label != string(verify.Pass) && why == "":
			t.Errorf("%s (%s): no why", e.Name(), label)
		case label == string(verify.Pass) && e.Accuracy.MaxWindowRatio <= 1 && e.Verification.PossibleViolations == 0 && why != "":
			t.Errorf("%s: a plain pass has a why: %q", e.Name(), why)
		}
		if e.Topology != "flawed" {
			continue
		}
		a, err := algorithms.Lookup(e.Algorithm)
		if err != nil {
			t.Fatal(err)
		}
		d := a.Describe()
		wants := []string{d.Flaw, "4 clients"}
		if d.Clock == algorithms.ClockClient {
			wants = append(wants, "skews the clients' clocks")
		}
		if e.Excerpt.Scope == "subject+client" {
			wants[1] = "1 client" // only c1's admissions count against its scope
		}
		for _, want := range wants {
			if !strings.Contains(why, want) {
				t.Errorf("why of %s lacks %q:\n%s", e.Name(), want, why)
			}
		}
	}
}

// TestWhyPassWithGranularity: the why of a pass whose worst window is above its limit names what
// excuses it, with the numbers: a fixed window's boundary, a clock granularity's 3 windows, the
// midpoints and warmup of the worst-window figure.
func TestWhyPassWithGranularity(t *testing.T) {
	r := readFixture(t, "demo-result.json")
	for _, tt := range []struct{ alg, want string }{
		{"resource-consumer-published", "an over-admission can be proven only when more than 3 × 20 = 60 permits fall within 3s"},
		{"sliding-log-published", "The worst-window figure (300%) places each request at the middle of its decision interval"},
		{"fixed-window", "it counts aligned windows of 1s, and up to 20 at the end of one and 20 at the start of the next fall within 1s"},
	} {
		e := r.Entry(tt.alg, "single")
		if got := Why(r, e); !strings.Contains(got, tt.want) {
			t.Errorf("Why(%s) = %q; want it to say %q", e.Name(), got, tt.want)
		}
	}
}

// TestWhyNothingAdmitted: a measured part without an admission, of a window longer than the
// run, is explained by the warmup.
func TestWhyNothingAdmitted(t *testing.T) {
	r := readFixture(t, "demo-result.json")
	e := &result.Entry{Algorithm: "fixed-window-published", Topology: "single", Verification: verify.Summary{
		Verdict: verify.Inconclusive, Contract: "fixed-window(20, 1m0s)", Reasons: []string{"no request was admitted"}}}
	got := Why(r, e)
	want := "Its window (1m0s) outlasts the warmup and the measured part together (0.5 s + 2 s)"
	if !strings.Contains(got, want) {
		t.Errorf("Why = %q; want it to say %q", got, want)
	}
	r.Scenario.Settings.WarmupS, r.Scenario.Settings.DurationS = 0, (2 * time.Minute).Seconds()
	if got := Why(r, e); strings.Contains(got, "warmup") {
		t.Errorf("Why without a warmup = %q; want no word of the warmup", got)
	}
}
