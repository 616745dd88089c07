package hunt

import (
	"bytes"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/result"
)

// TestVerdict: a hunt fails for a violation the scenario does not expect and for an algorithm
// it expects to break (expect.violations) that held; may_violate decides nothing.
func TestVerdict(t *testing.T) {
	expect := result.Expect{Violations: []string{"must"}, MayViolate: []string{"may"}}
	broke := func(name string) Entry {
		return Entry{Algorithm: name, Topology: "single", BestScore: 1.5, ExpectedViolation: name != "other",
			Violation: &Found{Schedule: Schedule{Trace: name + ".csv"}}}
	}
	held := func(name string) Entry { return Entry{Algorithm: name, Topology: "single", BestScore: 0.9} }
	for _, c := range []struct {
		name    string
		entries []Entry
		want    []string // substrings of the error; none: no error
	}{
		{"as expected", []Entry{broke("must"), broke("may"), held("other")}, nil},
		{"may_violate held", []Entry{broke("must"), held("may")}, nil},
		{"unexpected violation", []Entry{broke("must"), broke("other")}, []string{"other on single broke", "not listed under expect.may_violate", "(reproducer: other.csv)"}},
		{"expected violation held", []Entry{held("must"), broke("may")}, []string{"must on single held", "expect.violations not broken"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Verdict(&File{Entries: c.entries}, expect)
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("Verdict = %v; want nil", err)
				}
				return
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Verdict = %v; want it to say %q", err, w)
				}
			}
		})
	}
}

// TestWriteSummary: one line per entry under a header, each saying whether it held and, for a
// violation, whether it was expected and what replays it.
func TestWriteSummary(t *testing.T) {
	f := &File{Entries: []Entry{
		{Algorithm: "a", Topology: "single", Trials: 3, BestScore: 1.25, ExpectedViolation: true,
			Violation: &Found{Schedule: Schedule{Trace: "a-found.csv", Size: SizeOut{Rows: 36, Clients: 3}},
				Shrunk: &Shrunk{Trace: "a-repro.csv", Scenario: "a-repro.yaml", Size: SizeOut{Rows: 21, Clients: 1}, Minimal: true}}},
		{Algorithm: "b", Topology: "cluster", Trials: 12, BestScore: 2,
			Violation: &Found{Schedule: Schedule{Trace: "b-found.csv", Size: SizeOut{Rows: 1, Clients: 1}}}},
		{Algorithm: "c", Topology: "single", Trials: 40, BestScore: 0.95},
	}}
	var b bytes.Buffer
	WriteSummary(&b, f, "results/h")
	want := `ALGORITHM                      TOPOLOGY  TRIALS       BEST  RESULT
a                              single         3      1.250  violation (expected): 36 requests from 3 clients → 21 requests from 1 client (1-minimal); limitbench run results/h/a-repro.yaml
b                              cluster       12      2.000  VIOLATION: 1 request from 1 client; results/h/b-found.csv
c                              single        40      0.950  held
`
	if b.String() != want {
		t.Errorf("WriteSummary:\n%s\nwant:\n%s", b.String(), want)
	}
}
