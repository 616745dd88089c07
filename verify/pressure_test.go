package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
)

// TestPressure: windows that reached their allowance, denials and boundaries crossed under
// pressure, for each kind of contract, on the algorithm's own decisions.
func TestPressure(t *testing.T) {
	const W = 10 * time.Microsecond
	tests := []struct {
		name   string
		c      algorithms.Contract
		events []Event
		want   Pressure
	}{
		// The sliding window (2, 12] holds 3 and 12: the second aligned window reaches it too.
		{"sliding: a full window, then the next", sliding(2, W), []Event{adm(0), adm(3), adm(12)},
			Pressure{Windows: 2, Full: 2, FullShare: 1, Crossings: 1, Pressed: true}},
		{"sliding: a full window, then one below it", sliding(2, W), []Event{adm(0), adm(3), adm(15)},
			Pressure{Windows: 2, Full: 1, FullShare: 0.5, Crossings: 1, Pressed: true}},
		// The denial would have fitted (a false denial), but the limiter was pressed.
		{"sliding: a denial presses it", sliding(2, W), []Event{adm(0), kind(adm(3), Denied), adm(25)},
			Pressure{Windows: 2, Denials: 1, Pressed: true}},
		{"sliding: never pressed", sliding(2, W), []Event{adm(0), adm(12), adm(25)},
			Pressure{Windows: 3}},
		{"fixed: full, then a quiet window, then one more", fixed(1, W), []Event{adm(1), adm(35)},
			Pressure{Windows: 2, Full: 2, FullShare: 1, Pressed: true}},
		{"token bucket: drained, then refilling across the period", bucket(2, 1, W), []Event{adm(0), adm(0), adm(11)},
			Pressure{Windows: 2, Full: 1, FullShare: 0.5, Crossings: 1, Pressed: true}},
		// 1.9 tokens drawn at most: 0.1 refilled by 1 µs.
		{"token bucket: nearly drained", bucket(2, 1, W), []Event{adm(0), adm(1), adm(11)},
			Pressure{Windows: 2}},
		{"token bucket: never drained", bucket(3, 1, W), []Event{adm(0), adm(15)},
			Pressure{Windows: 2}},
		{"first-hit: the denial opens a window that fills", firstHit(1, W), []Event{denied(0), adm(5), adm(12)},
			Pressure{Windows: 2, Full: 2, FullShare: 1, Denials: 1, Crossings: 1, Pressed: true}},
		{"first-hit: a window opened long after the last", firstHit(1, W), []Event{adm(0), adm(35)},
			Pressure{Windows: 2, Full: 2, FullShare: 1, Pressed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Accuracy(tt.c, newLog(tt.events...), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, r.Pressure); d != "" {
				t.Errorf("Pressure (-want +got):\n%s", d)
			}
		})
	}
}

// TestSectionsPressure (issue 29 item 6): a measurement that pressed its contract passes and
// says the contract held; one that never pressed it is inconclusive, "the contract was never
// pressed", unless the scenario measures speed only, when it keeps its pass and says that the
// contract was not exercised. The figures are in the summary either way.
func TestSectionsPressure(t *testing.T) {
	const start = 1_700_000_000_000_000
	c := sliding(2, 10*time.Microsecond)
	log := func(evs ...Event) *Log { return atBase(start, newLog(evs...)) }
	for _, tt := range []struct {
		name      string
		log       *Log
		speedOnly bool
		verdict   Verdict
		reason    bool
		finding   string
	}{
		{"pressed", log(adm(0), adm(3), kind(adm(5), Denied)), false, Pass, false, "Never admitted more than"},
		{"never pressed", log(adm(0), adm(12), adm(25)), false, Inconclusive, true, "never pressed"},
		{"speed only", log(adm(0), adm(12), adm(25)), true, Pass, false, "not exercised"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, _ := Measurement{Contract: c, Log: tt.log, Start: start, SpeedOnly: tt.speedOnly}.Sections()
			if v.Verdict != tt.verdict {
				t.Errorf("Verdict = %s; want %s (reasons %q)", v.Verdict, tt.verdict, v.Reasons)
			}
			has := false
			for _, r := range v.Reasons {
				has = has || r == "the contract was never pressed"
			}
			if has != tt.reason {
				t.Errorf("Reasons = %q; the never-pressed reason wanted: %v", v.Reasons, tt.reason)
			}
			if !strings.Contains(v.Finding, tt.finding) {
				t.Errorf("Finding = %q; want it to say %q", v.Finding, tt.finding)
			}
			if v.Pressure == nil || v.Pressure.Pressed != (tt.name == "pressed") {
				t.Errorf("Pressure = %+v", v.Pressure)
			}
		})
	}
}

// TestFindingNeverClaimsTheContractHeldWithAPossibleViolation (issue 29): a pass with possible
// violations says what could not be ruled out, and never that the contract held.
func TestFindingNeverClaimsTheContractHeldWithAPossibleViolation(t *testing.T) {
	const start = 1_700_000_000_000_000
	c := sliding(1, 10*time.Microsecond)
	// Two admissions that may be 10 µs apart (in two windows) or 9 (in one).
	m := Measurement{Contract: c, Log: atBase(start, newLog(adm(0), span(9, 10), kind(adm(4), Denied))), Start: start}
	v, _ := m.Sections()
	if v.Verdict != Pass || v.PossibleViolations == 0 {
		t.Fatalf("Verdict %s, possible %d; want a pass with a possible violation", v.Verdict, v.PossibleViolations)
	}
	if strings.Contains(v.Finding, "Never admitted") || !strings.Contains(v.Finding, "could not be ruled out") ||
		!strings.Contains(v.Finding, "2 permits where 1 were allowed") {
		t.Errorf("Finding = %q; want what could not be ruled out, and no claim that the contract held", v.Finding)
	}
}
