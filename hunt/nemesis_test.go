package hunt

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
)

// stateLosers are the kinds the simulated trial models (a fresh limiter at the fault): every
// kind that loses the state.
var stateLosers = []string{string(scenarios.FaultRestart), string(scenarios.FaultEvict)}

// huntFaults hunts a simulated target with schedules that place faults.
func huntFaults(t *testing.T, c subjectCase, seed uint64, trials int) *Result {
	t.Helper()
	clock := &fakeClock{t: simEpoch}
	b := Bounds{Faults: stateLosers}
	res, err := Hunt(context.Background(), Config{Target: c.target, Bounds: b, Budget: Budget{Trials: trials, Batch: 4}, Seed: seed,
		Trial: simTrial(c.target, FrameOf(c.target, b), c.mk, nil), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestNemesisNeverChargesCorrectModels: with faults in the search, no correct model is ever
// found violating (a violation across a loss of the state is the loss's), and the search finds
// placements where the faults cost permits, which it reports apart (Result.Costliest).
func TestNemesisNeverChargesCorrectModels(t *testing.T) {
	costly := 0
	cases := correctCases(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := huntFaults(t, c, 1, 200)
			if v := res.Violation; v != nil {
				t.Fatalf("violation of a correct model charged to it: trial %d (%s, faults %v), score %v", v.Trial, v.Family,
					FaultNames(v.Trace), v.Score())
			}
			if c := res.Costliest; c != nil {
				costly++
				placed := len(c.Trace.Faults)
				if c.Cost <= 0 || placed == 0 || len(c.Faults) != placed {
					t.Errorf("costliest schedule: cost %d, %d faults placed, %d reported", c.Cost, placed, len(c.Faults))
				}
				t.Logf("faults cost %d permits at most (trial %d: %v)", c.Cost, c.Trial, FaultNames(c.Trace))
			}
		})
	}
	if costly < len(cases)/2 {
		t.Errorf("the faults cost permits for %d of %d correct models; want at least half: a loss of the state at the right time lets a window's allowance through twice", costly, len(cases))
	}
}

// TestNemesisFindsFlawsAndShrinksFaults: with faults in the search, a flawed limiter is still
// found, its violation judged between the losses of the state, and faults it does not need are
// shrunk away.
func TestNemesisFindsFlawsAndShrinksFaults(t *testing.T) {
	for _, c := range flawedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			res := huntFaults(t, c, 1, 300)
			v := res.Violation
			if v == nil {
				t.Fatalf("no violation in %d trials (stop %s); best %.3f", res.Trials, res.Stop, res.Best.Score())
			}
			sr := v.Shrunk
			if sr == nil || !sr.To.Less(sr.From) && sr.From.Rows > 2 {
				t.Fatalf("not shrunk: %+v", sr)
			}
			if sr.To.Faults != 0 {
				t.Errorf("shrunk to %s: the flaw needs no fault, yet %v stayed", sr.To, FaultNames(sr.Trace))
			}
			t.Logf("trial %d (%s, faults %v): shrunk from %s to %s", v.Trial, v.Family, FaultNames(v.Trace), sr.From, sr.To)
		})
	}
}

// TestNemesisSchedules: schedules of a faulty search place at most MaxFaults faults of the kinds
// allowed, in order, within the span; a search without faults draws the schedules it always did.
func TestNemesisSchedules(t *testing.T) {
	c := correctCases(t)[0]
	b := Bounds{Faults: []string{"pause", "restart"}}.withDefaults()
	with := 0
	for seed := range uint64(200) {
		for _, f := range FamiliesFor(c.target) {
			tr := f.Make(c.target, b, seed)
			if err := tr.Validate(); err != nil {
				t.Fatalf("%s seed %d: %v", f.Name, seed, err)
			}
			if len(tr.Faults) > MaxFaults {
				t.Fatalf("%s seed %d: %d faults", f.Name, seed, len(tr.Faults))
			}
			for _, ft := range tr.Faults {
				with++
				if ft.Kind != "pause" && ft.Kind != "restart" || ft.At > b.Span || ft.At+ft.Duration > b.Span ||
					(ft.Kind == "pause") != (ft.Duration > 0) {
					t.Fatalf("%s seed %d: fault %+v", f.Name, seed, ft)
				}
			}
			plain := f.Make(c.target, Bounds{}.withDefaults(), seed)
			if len(plain.Faults) != 0 {
				t.Fatalf("%s seed %d: a schedule without faults allowed placed %v", f.Name, seed, plain.Faults)
			}
		}
	}
	if with == 0 {
		t.Fatal("no schedule placed a fault")
	}
	if _, err := scenarios.FaultsOf(&trace.Trace{Faults: []trace.Fault{{At: time.Second, Kind: "kill"}}}, time.Second); err == nil {
		t.Error("FaultsOf took a kill, which leaves the master dead")
	}
	if (Bounds{Faults: []string{"kill"}}).Validate() == nil {
		t.Error("Bounds took fault kind kill")
	}
}
