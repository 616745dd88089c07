package verify

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
)

// measureCase is a measurement drawn for the differential test: its settings, its measured
// and warmup events (one Base), the disruptions and faults the node watch and the runner
// report, and the warnings.
type measureCase struct {
	m                Measurement
	log, warm        *Log
	ds               []Disruption
	fs               []InjectedFault
	newModel         func() algorithms.Model
	bin              time.Duration
	disruptions      bool
	warnings         Warnings
	horizon, delayCs int64
}

// drawMeasureCase draws a measurement over a small log of every contract kind.
func drawMeasureCase(t *rapid.T) measureCase {
	kinds := []algorithms.ContractKind{algorithms.SlidingWindow, algorithms.FixedWindow, algorithms.TokenBucket, algorithms.FirstHitWindow}
	c := genStreamContract(t, kinds)
	log := genLog(t, 40)
	if rapid.Bool().Draw(t, "wide") {
		log = genWideLog(t, 120, rapid.Int64Range(1, 3).Draw(t, "step"))
	}
	mc := measureCase{log: log, horizon: rapid.Int64Range(0, 20).Draw(t, "horizon"),
		delayCs: rapid.Int64Range(0, 20).Draw(t, "cutDelay"), bin: us(rapid.Int64Range(1, 30).Draw(t, "bin"))}
	start := log.Base + rapid.Int64Range(-5, 40).Draw(t, "start")
	// The warmup: the events before start, moved to a log of their own.
	warm := &Log{Subjects: log.Subjects, Clients: log.Clients, Base: log.Base}
	if rapid.Bool().Draw(t, "warmup") {
		var kept []Event
		for _, e := range log.Events {
			if log.Base+e.Lo() < start {
				warm.Events = append(warm.Events, e)
			} else {
				kept = append(kept, e)
			}
		}
		log.Events = kept
		mc.warm = warm
	}
	mc.m = Measurement{Contract: c, Start: start, Fresh: rapid.Bool().Draw(t, "fresh"), SpeedOnly: rapid.Bool().Draw(t, "speedOnly")}
	switch rapid.IntRange(0, 2).Draw(t, "model") {
	case 1:
		mc.newModel = func() algorithms.Model { return newRefLimiter(c) }
	case 2:
		mc.newModel = func() algorithms.Model {
			return algorithms.NewFirstHitModel(algorithms.Limit{Limit: max(c.Limit, 1), Window: max(c.Window, time.Microsecond)})
		}
	}
	mc.disruptions = rapid.Bool().Draw(t, "disruptions")
	if mc.disruptions {
		mc.ds = drawDisruptions(t, log.Base)
		mc.fs = drawFaults(t, log.Base)
	}
	mc.warnings = Warnings{Behind: rapid.IntRange(0, 5).Draw(t, "behind") == 0, Dropped: uint64(rapid.IntRange(0, 5).Draw(t, "dropped") / 5),
		Canceled: rapid.IntRange(0, 5).Draw(t, "canceled") == 0}
	return mc
}

// drawDisruptions draws restarts, pauses and a promotion over the log's first 100 µs.
func drawDisruptions(t *rapid.T, base int64) []Disruption {
	var ds []Disruption
	for i := range rapid.IntRange(0, 3).Draw(t, "disruptionCount") {
		lo := base + rapid.Int64Range(0, 100).Draw(t, fmt.Sprint("dlo", i))
		d := Disruption{Lo: lo, Hi: lo + rapid.Int64Range(0, 15).Draw(t, fmt.Sprint("dhi", i)), Node: "n1", Kind: "restarted",
			What: fmt.Sprintf("n1 restarted #%d", i), StateLost: rapid.IntRange(0, 3).Draw(t, fmt.Sprint("lost", i)) > 0}
		if rapid.IntRange(0, 4).Draw(t, fmt.Sprint("promotion", i)) == 0 {
			d.Node, d.Kind, d.What, d.Former, d.StateLost = "n2", "promoted", "n2 was promoted", "n1", true
		}
		ds = append(ds, d)
	}
	if rapid.Bool().Draw(t, "deposed") && len(ds) > 0 {
		lo := base + rapid.Int64Range(0, 120).Draw(t, "deplo")
		ds = append(ds, Disruption{Lo: lo, Hi: lo + 3, Node: "n1", Kind: "demoted", What: "n1 became a replica", Deposes: true})
	}
	// In the order the node watch sees them.
	slices.SortStableFunc(ds, func(a, b Disruption) int { return cmp.Compare(a.Lo, b.Lo) })
	return ds
}

// drawFaults draws injected faults over the log's first 100 µs, some never started.
func drawFaults(t *rapid.T, base int64) []InjectedFault {
	var fs []InjectedFault
	for i := range rapid.IntRange(0, 2).Draw(t, "faultCount") {
		f := InjectedFault{Name: fmt.Sprintf("fault %d", i), Kind: "restart", Target: "master", Nodes: []string{"n1"}}
		if rapid.IntRange(0, 4).Draw(t, fmt.Sprint("started", i)) > 0 {
			f.Lo = base + rapid.Int64Range(0, 100).Draw(t, fmt.Sprint("flo", i))
			f.Hi = f.Lo + rapid.Int64Range(0, 10).Draw(t, fmt.Sprint("fhi", i))
			f.Until = f.Hi + rapid.Int64Range(0, 20).Draw(t, fmt.Sprint("funtil", i))
		} else {
			f.Err = "not started"
		}
		fs = append(fs, f)
	}
	return fs
}

// batch returns what Measurement gives for the case.
func (mc measureCase) batch() (Summary, AccuracySummary, []float64) {
	m := mc.m
	m.Log, m.Warnings, m.Disruptions, m.Faults = cloneLog(mc.log), mc.warnings, mc.ds, mc.fs
	if mc.warm != nil {
		m.Warmup = cloneLog(mc.warm)
	}
	if mc.newModel != nil {
		m.Model = mc.newModel()
	}
	v, acc := m.Sections()
	m.Log = cloneLog(mc.log)
	return v, acc, m.BinLimits(mc.bin, 8)
}

// stream returns what a MeasurementStream gives for the case, its events, disruptions and
// faults arriving in an order its promises allow.
func (mc measureCase) stream(t *rapid.T, dir string) (Summary, AccuracySummary, []float64, error) {
	m := mc.m
	if mc.newModel != nil {
		m.Model = mc.newModel()
	}
	ms, err := NewMeasurementStream(m, mc.log.Base, mc.log.Subjects, mc.log.Clients,
		StreamSettings{Disruptions: mc.disruptions, BinWidths: []time.Duration{mc.bin}, SpillDir: dir})
	if err != nil {
		return Summary{}, AccuracySummary{}, nil, err
	}
	type item struct {
		e      Event
		warmup bool
		at     int64
	}
	var items []item
	add := func(log *Log, warmup bool) {
		if log == nil {
			return
		}
		for i, e := range log.Events {
			items = append(items, item{e, warmup, e.Lo() + rapid.Int64Range(0, mc.horizon).Draw(t, fmt.Sprint("arrive", warmup, i))})
		}
	}
	add(mc.warm, true)
	add(mc.log, false)
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.at, b.at) })
	// Disruptions and faults are reported delayCs after they begin (faults once over): the cuts
	// may advance to the earliest still unreported.
	reported := 0
	report := func(now int64) {
		for ; reported < len(mc.ds) && mc.ds[reported].Lo-mc.log.Base+mc.delayCs <= now; reported++ {
			ms.Disrupt(mc.ds[reported])
		}
		lo := int64(1 << 60)
		if reported < len(mc.ds) {
			lo = mc.ds[reported].Lo
		}
		ms.AdvanceCuts(min(lo, mc.log.Base+now-mc.delayCs))
	}
	for _, f := range mc.fs {
		ms.Fault(f) // before any cut is promised
	}
	for i, x := range items {
		ms.Add(x.e, x.warmup)
		report(x.at)
		if rapid.IntRange(0, 2).Draw(t, fmt.Sprint("adv", i)) == 0 {
			ms.Advance(x.at - mc.horizon)
		}
	}
	report(1 << 50)
	v, acc := ms.Sections(mc.warnings)
	return v, acc, ms.BinLimits(mc.bin, 8), nil
}

// TestMeasurementStreamMatchesMeasurement (issue 30): a MeasurementStream fed a measurement's
// events, disruptions and faults in any order its promises allow gives the verification and
// accuracy sections and the bin limits that Measurement gives on the whole history: every
// contract kind, scopes, unknown outcomes, granularity, warmups, reference models, epochs cut by
// restarts and promotions, and injected faults.
func TestMeasurementStreamMatchesMeasurement(t *testing.T) {
	dir := t.TempDir()
	checkN(t, streamCases, func(t *rapid.T) {
		mc := drawMeasureCase(t)
		wantV, wantA, wantB := mc.batch()
		gotV, gotA, gotB, err := mc.stream(t, dir)
		if err != nil {
			t.Fatalf("NewMeasurementStream: %v", err)
		}
		if d := gocmp.Diff(wantV, gotV); d != "" {
			t.Fatalf("%s: verification differs (-Measurement +stream):\n%s", mc.m.Contract, d)
		}
		if d := gocmp.Diff(wantA, gotA); d != "" {
			t.Fatalf("%s: accuracy differs (-Measurement +stream):\n%s", mc.m.Contract, d)
		}
		if d := gocmp.Diff(wantB, gotB); d != "" {
			t.Fatalf("%s: bin limits differ (-Measurement +stream):\n%s", mc.m.Contract, d)
		}
	})
}
