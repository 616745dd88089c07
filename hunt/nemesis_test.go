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

// clientLog is a sliding log per subject and client on the client's clock: it keeps its
// contract (limit per window, per subject and client) whatever offset each client's clock has,
// as long as the offset stays put; a clock that jumps forward makes its grants look old, and it
// admits a window's allowance again.
type clientLog struct {
	limit, window int64
	logs          map[string][]int64
}

func (c *clientLog) decide(subject, client string, cost, _, clientUs int64) bool {
	k := subject + "\x00" + client
	log := c.logs[k]
	kept := log[:0]
	for _, at := range log {
		if at > clientUs-c.window {
			kept = append(kept, at)
		}
	}
	if int64(len(kept))+cost > c.limit {
		c.logs[k] = kept
		return false
	}
	for range cost {
		kept = append(kept, clientUs)
	}
	c.logs[k] = kept
	return true
}

// TestNemesisClockJumps: a limiter that trusts each client's clock, per subject and client, holds
// under clients whose clocks are off but steady, so a hunt without jumps finds nothing; with
// clock jumps in the search (ClockJump) it breaks, and the reproducer keeps the jump.
func TestNemesisClockJumps(t *testing.T) {
	l := demoLimit
	tg := mustTarget(t, "redisson-per-client", l, demoSkews)
	mk := func() limiter {
		return &clientLog{limit: l.Limit, window: l.Window.Microseconds(), logs: map[string][]int64{}}
	}
	plain, _ := huntSim(t, tg, mk, 1, 300)
	if v := plain.Violation; v != nil {
		t.Fatalf("without jumps: violation at trial %d (%s): the model must hold under steady offsets", v.Trial, v.Family)
	}
	clock := &fakeClock{t: simEpoch}
	b := Bounds{Faults: []string{ClockJump}}
	res, err := Hunt(context.Background(), Config{Target: tg, Bounds: b, Budget: Budget{Trials: 300, Batch: 4}, Seed: 1,
		Trial: simTrial(tg, FrameOf(tg, b), mk, nil), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Violation
	if v == nil {
		t.Fatalf("with clock jumps: no violation in %d trials; best %.3f", res.Trials, res.Best.Score())
	}
	sr := v.Shrunk
	if sr == nil || len(sr.Trace.Jumps) == 0 {
		t.Fatalf("reproducer %+v: want one that keeps a clock jump", sr)
	}
	// Replayed, the reproducer breaks the contract; without its jumps it does not.
	trial := simTrial(tg, res.Frame, mk, nil)
	still := sr.Trace.Clone()
	still.Jumps = nil
	ms, err := trial(context.Background(), []*trace.Trace{sr.Trace, still})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		j, err := judge(tg.Contract, ms[i], false)
		if err != nil {
			t.Fatal(err)
		}
		if got := j.Approach.Score > 1; got != want {
			t.Errorf("replay %d (jumps kept: %v): violation %v, score %.3f", i, want, got, j.Approach.Score)
		}
	}
	t.Logf("trial %d (%s): %v; shrunk from %s to %s", v.Trial, v.Family, FaultNames(v.Trace), sr.From, sr.To)
}
