package hunt

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/golden"
)

// goldenFile is the hunt.json of two simulated hunts with seed 1: one that breaks
// fixed-window-published's clock flaw and shrinks it, one of a correct model that never breaks.
func goldenFile(t *testing.T) *File {
	t.Helper()
	flawed := flawedCases(t)[0]
	broke, _ := huntSim(t, flawed.target, flawed.mk, 1, 300)
	var correct subjectCase
	for _, c := range correctCases(t) {
		if c.name == "token-bucket" {
			correct = c
		}
	}
	held, _ := huntSim(t, correct.target, correct.mk, 1, 50)
	return &File{
		Schema: Schema, Scenario: "demo", Seed: 1, BudgetS: 60, Trials: 300, SpanS: 2,
		Entries: []Entry{
			NewEntry(broke, "single", Files{Best: "fixed-window-published-single-best.csv", Found: "fixed-window-published-single-found.csv",
				Shrunk: "fixed-window-published-single-reproducer.csv", Scenario: "fixed-window-published-single-reproducer.yaml"}),
			NewEntry(held, "single", Files{Best: "token-bucket-single-best.csv"}),
		},
	}
}

// TestFileGolden: hunt.json's exact form, and a round trip through Write and ReadFile.
func TestFileGolden(t *testing.T) {
	f := goldenFile(t)
	// Elapsed times come from the injected clock: zero, so the file is deterministic.
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/hunt.json", buf.Bytes())
	back, err := ReadFile(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, back); diff != "" {
		t.Errorf("round trip (-wrote +read):\n%s", diff)
	}
	e := back.Entries[0]
	if e.Violation == nil || e.Violation.Shrunk == nil || e.BestScore <= 1 || e.Closest == nil || e.Violation.Worst.Excess <= 0 {
		t.Errorf("the broken algorithm's entry lacks its violation: %+v", e)
	}
	if h := back.Entries[1]; h.Violation != nil || h.BestScore > 1 || h.Closest == nil || h.Stop != "trials" {
		t.Errorf("the correct algorithm's entry: %+v", h)
	}
}

// TestReadFileStrict: another schema, unknown fields and trailing data are refused.
func TestReadFileStrict(t *testing.T) {
	for name, in := range map[string]string{
		"schema":   `{"schema":"limitbench/hunt/v0","scenario":"x","seed":1,"budget_s":1,"span_s":2,"algorithms":[]}`,
		"unknown":  `{"schema":"limitbench/hunt/v1","scenario":"x","seed":1,"budget_s":1,"span_s":2,"algorithms":[],"extra":1}`,
		"trailing": `{"schema":"limitbench/hunt/v1","scenario":"x","seed":1,"budget_s":1,"span_s":2,"algorithms":[]} {}`,
		"not json": `schema: v1`,
	} {
		if _, err := ReadFile(strings.NewReader(in)); !errors.Is(err, ErrBadFile) {
			t.Errorf("%s: ReadFile = %v; want ErrBadFile", name, err)
		}
	}
}

// TestReadPreviousFile: a hunt.json written by the version before Align, Closest, Worst and
// Confirm became the owners' types (arrival.Align, verify.Closest, verify.Where, Confirmation)
// reads, means the same, and is written back byte for byte: the field names did not change.
func TestReadPreviousFile(t *testing.T) {
	const previous = "testdata/hunt-previous.json"
	want, err := os.ReadFile(previous)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(bytes.NewReader(want))
	if err != nil {
		t.Fatalf("%s: %v", previous, err)
	}
	e := f.Entries[0]
	if e.Algorithm != "fixed-window-published" || e.Align.Every != time.Minute || e.Align.Offset != 59*time.Second {
		t.Errorf("%s: first entry %s aligned %+v; want fixed-window-published at 59s past a minute", previous, e.Algorithm, e.Align)
	}
	if c := e.Closest; c == nil || c.Limit != "fixed-window(20, 1m0s)" || c.Subject != "s0" || c.Permits != 40 || c.Allowed != 20 || c.Score != 2 ||
		c.Lo != 1795888739127191 || c.Hi != 1795888739394212 {
		t.Errorf("%s: closest %+v", previous, c)
	}
	if v := e.Violation; v == nil || v.Worst.Limit != "fixed-window(20, 1m0s)" || v.Worst.Permits != 40 || v.Worst.Allowed != 20 || v.Worst.Excess != 20 ||
		v.Worst.Lo != 1795888739127191 || v.Shrunk == nil || v.Shrunk.Confirm == nil || *v.Shrunk.Confirm != (Confirmation{Replays: 5, Broke: 5}) {
		t.Errorf("%s: violation %+v", previous, v)
	}
	var got bytes.Buffer
	if err := f.Write(&got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("%s read and written again (-previous +now):\n%s", previous, diff)
	}
}
