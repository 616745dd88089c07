package hunt

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/verify"
)

// firstHitTarget is a first-hit-window contract: the first-hit family keys on its kind alone.
func firstHitTarget(l algorithms.Limit) Target {
	return Target{Algorithm: "first-hit", Contract: algorithms.Contract{Kind: FirstHitWindow, Limit: l.Limit, Window: l.Window}, Clock: algorithms.ClockServer}
}

// genTarget draws a target: a registered algorithm (or a first-hit-window contract) under a
// random limit, with or without clock offsets.
func genTarget(t *rapid.T) Target {
	l := algorithms.Limit{
		Limit:         rapid.Int64Range(1, 200).Draw(t, "limit"),
		Window:        time.Duration(rapid.Int64Range(1, 120_000).Draw(t, "window_ms")) * time.Millisecond,
		Burst:         rapid.Int64Range(0, 300).Draw(t, "burst"),
		ConsumerLimit: rapid.Int64Range(0, 50).Draw(t, "consumer"),
	}
	var skews []time.Duration
	if rapid.Bool().Draw(t, "skewed") {
		skews = rapid.SliceOfN(rapid.SampledFrom([]time.Duration{0, time.Millisecond, 2 * time.Second, -2 * time.Second, 30 * time.Second}), 1, 4).Draw(t, "skews")
	}
	names := append(algorithms.Names(), "first-hit-window")
	name := rapid.SampledFrom(names).Draw(t, "algorithm")
	if name == "first-hit-window" {
		return firstHitTarget(l)
	}
	a, err := algorithms.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if d := a.Describe(); d.Flaw == "" && a.Model(l) == nil {
		t.Skip("no contract: the reference script")
	}
	tg, err := TargetOf(a, l, skews)
	if err != nil {
		t.Skipf("no target: %v", err)
	}
	return tg
}

// TestFamiliesKeepBounds: every family that applies makes, for any target, bounds and seed, a
// valid canonical trace within the bounds, with clock offsets only from the target's list (and
// only for client clocks) and costs above 1 only for targets that take them; the same arguments
// give the same trace.
func TestFamiliesKeepBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tg := genTarget(t)
		b := Bounds{
			Span:     time.Duration(rapid.Int64Range(1, 5000).Draw(t, "span_ms")) * time.Millisecond,
			Rows:     rapid.IntRange(1, 3000).Draw(t, "rows"),
			Clients:  rapid.IntRange(1, 80).Draw(t, "clients"),
			Subjects: rapid.IntRange(1, 5).Draw(t, "subjects"),
		}
		fams := FamiliesFor(tg)
		f := fams[rapid.IntRange(0, len(fams)-1).Draw(t, "family")]
		seed := rapid.Uint64().Draw(t, "seed")
		tr := f.Make(tg, b, seed)
		if err := tr.Validate(); err != nil {
			t.Fatalf("%s: invalid trace: %v", f.Name, err)
		}
		if diff := cmp.Diff(tr.Canonical(), tr); diff != "" {
			t.Fatalf("%s: not canonical:\n%s", f.Name, diff)
		}
		if len(tr.Rows) > b.Rows || tr.Span() > b.Span || len(tr.Clients) > b.Clients || len(tr.Subjects) > b.Subjects {
			t.Fatalf("%s: %d rows, span %s, %d clients, %d subjects; bounds %+v", f.Name, len(tr.Rows), tr.Span(), len(tr.Clients), len(tr.Subjects), b)
		}
		for c := range tr.Clients {
			s := tr.SkewOf(uint16(c))
			if s != 0 && (tg.Clock != algorithms.ClockClient || !slices.Contains(tg.Skews, s)) {
				t.Fatalf("%s: client %d has offset %s; target %s allows %v", f.Name, c, s, tg.Clock, tg.Skews)
			}
		}
		for _, r := range tr.Rows {
			if r.Cost > 1 && !tg.Cost {
				t.Fatalf("%s: cost %d for %s, which takes one permit", f.Name, r.Cost, tg.Algorithm)
			}
		}
		if again := f.Make(tg, b, seed); !cmp.Equal(tr, again) {
			t.Fatalf("%s: Make is not a pure function of its arguments", f.Name)
		}
		// Mutations keep the same promises.
		m := mutate(tg, b, newGen(tg, b, seed, "m").rng, tr)
		if err := m.Validate(); err != nil || len(m.Rows) > b.Rows || m.Span() > b.Span || len(m.Clients) > b.Clients || len(m.Subjects) > b.Subjects {
			t.Fatalf("mutation of %s: %v; %d rows, span %s, %d clients, %d subjects", f.Name, err, len(m.Rows), m.Span(), len(m.Clients), len(m.Subjects))
		}
	})
}

// TestFamiliesFor: families are chosen by the contract's kind and the algorithm's declarations.
func TestFamiliesFor(t *testing.T) {
	l := demoLimit
	names := func(tg Target) []string {
		var out []string
		for _, f := range FamiliesFor(tg) {
			out = append(out, f.Name)
		}
		return out
	}
	common := []string{"anchored", "key-expiry", "after-drain", "spike", "poisson", "on-off"}
	tests := []struct {
		tg   Target
		want []string
	}{
		{mustTarget(t, "fixed-window", l, demoSkews), []string{"window-boundary", "overshoot"}},
		{mustTarget(t, "sliding-log", l, nil), []string{"window-boundary", "first-hit", "overshoot"}},
		{mustTarget(t, "gcra", l, nil), []string{"window-boundary", "refill-point", "overshoot"}},
		{mustTarget(t, "resource-consumer-published", l, nil), []string{"window-boundary", "refill-point", "first-hit", "overshoot"}},
		{mustTarget(t, "token-bucket-published", l, nil), []string{"window-boundary", "refill-point", "overshoot"}},
		{mustTarget(t, "token-bucket-published", l, demoSkews), []string{"window-boundary", "refill-point", "skewed-newcomer", "skew-alternation", "overshoot"}},
		{mustTarget(t, "fixed-window-published", l, []time.Duration{3 * time.Second}), []string{"window-boundary", "skewed-newcomer"}},
		{mustTarget(t, "redisson", l, demoSkews), []string{"window-boundary", "first-hit", "skewed-newcomer", "skew-alternation", "overshoot"}},
		{firstHitTarget(l), []string{"window-boundary", "first-hit"}},
	}
	for _, tt := range tests {
		got := names(tt.tg)
		want := append(slices.Clone(tt.want), common...)
		slices.SortFunc(want, func(a, b string) int { return familyIndex(a) - familyIndex(b) })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("FamiliesFor(%s, %s, skews %v) (-want +got):\n%s", tt.tg.Algorithm, tt.tg.Contract, tt.tg.Skews, diff)
		}
	}
}

func familyIndex(name string) int {
	return slices.IndexFunc(Families, func(f Family) bool { return f.Name == name })
}

// TestFrameOf: time zero lies half the period (or half the span) before a boundary.
func TestFrameOf(t *testing.T) {
	l := demoLimit
	tests := []struct {
		tg         Target
		b          Bounds
		every, off time.Duration
	}{
		{mustTarget(t, "fixed-window", l, nil), Bounds{}, time.Second, 500 * time.Millisecond},
		{mustTarget(t, "fixed-window-published", l, nil), Bounds{}, time.Minute, 59 * time.Second},
		{mustTarget(t, "token-bucket-published", algorithms.Limit{Limit: 5, Window: 10 * time.Second}, nil), Bounds{}, time.Second, 500 * time.Millisecond},
		{mustTarget(t, "token-bucket", algorithms.Limit{Limit: 5, Window: 10 * time.Second}, nil), Bounds{Span: 4 * time.Second}, 10 * time.Second, 8 * time.Second},
		{mustTarget(t, "redisson", l, nil), Bounds{}, time.Second, 500 * time.Millisecond}, // 1 ms granularity is too fine to aim at
	}
	for _, tt := range tests {
		f := FrameOf(tt.tg, tt.b)
		if f.Every != tt.every || f.Offset != tt.off {
			t.Errorf("FrameOf(%s) = %+v; want every %s offset %s", tt.tg.Algorithm, f, tt.every, tt.off)
		}
		bs := boundaries(f, max(tt.b.Span, DefaultSpan))
		if len(bs) == 0 || bs[0] != tt.every-tt.off {
			t.Errorf("boundaries(%s) = %v; want the first at %s", tt.tg.Algorithm, bs, tt.every-tt.off)
		}
	}
}

// familyCase pairs a family with the flaw it aims at and with a correct limiter for the same
// contract.
type familyCase struct {
	family  string
	target  Target
	flawed  func() limiter
	correct func() limiter
}

func familyCases(t *testing.T) []familyCase {
	l := demoLimit
	model := func(name string, l algorithms.Limit) func() limiter {
		a, err := algorithms.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return func() limiter { return serverModel{a.Model(l)} }
	}
	fixedModel := model("fixed-window", l)
	slidingModel := model("sliding-log", l)
	bucketModel := model("token-bucket", l)
	minuteModel := model("fixed-window", algorithms.Limit{Limit: 20, Window: time.Minute})
	flawed := flawedCases(t)
	fixed := flawed[4].target // fixed-window(20, 1s), server clock
	sliding := flawed[2].target
	bucket := flawed[3].target
	// A fixed window held to a sliding contract, and a minute-keyed window seen through skew.
	overBy := func() limiter { return &overByOne{*newSnapshotRace(l)} }
	return []familyCase{
		{"window-boundary", sliding, fixedModel, slidingModel},
		{"window-boundary", flawed[0].target, flawed[0].mk, minuteModel},
		{"refill-point", bucket, flawed[3].mk, bucketModel},
		{"first-hit", sliding, flawed[2].mk, slidingModel},
		{"skewed-newcomer", flawed[0].target, flawed[0].mk, minuteModel},
		{"skew-alternation", flawed[1].target, flawed[1].mk, bucketModel},
		{"spike", fixed, flawed[4].mk, fixedModel},
		// A count checked for equality, on whole seconds, held to a contract of granularity 1 s.
		{"overshoot", mustTarget(t, "resource-consumer-published", l, nil), func() limiter { return newEqualsOnly(l) }, model("resource-consumer", l)},
		// A bucket that refills 10 every 500 ms from its first request, held to the same rate.
		{"anchored", bucket, func() limiter { return newAnchoredRefill(20, 10, 500*time.Millisecond) }, bucketModel},
		// A first-hit window that admits in its key's expiry millisecond (PTTL 0).
		{"key-expiry", firstHitTarget(l), func() limiter { return newPTTLZero(l) }, func() limiter { return newFirstHit(l) }},
		{"after-drain", fixed, overBy, fixedModel},
		{"poisson", fixed, overBy, fixedModel},
		{"on-off", fixed, overBy, fixedModel},
	}
}

// TestFamiliesFindWhatTheyAimAt: each family, on its own, breaks the flawed limiter it aims at
// within 20 seeds, and never breaks a correct limiter of the same contract.
func TestFamiliesFindWhatTheyAimAt(t *testing.T) {
	for _, c := range familyCases(t) {
		t.Run(c.family+"/"+c.target.Algorithm, func(t *testing.T) {
			f, ok := FamilyNamed(c.family)
			if !ok || !f.Applies(c.target) {
				t.Fatalf("family %q does not apply to %s", c.family, c.target.Algorithm)
			}
			frame := FrameOf(c.target, Bounds{})
			flawed := simTrial(c.target, frame, c.flawed, nil)
			correct := simTrial(c.target, frame, c.correct, nil)
			found := 0
			var best float64
			for seed := range uint64(20) {
				tr := f.Make(c.target, Bounds{}, seed)
				score := func(trial Trial) float64 {
					logs, err := trial(context.Background(), []*trace.Trace{tr})
					if err != nil {
						t.Fatal(err)
					}
					ap, err := verify.ApproachOf(c.target.Contract, logs[0].Log)
					if err != nil {
						t.Fatal(err)
					}
					return ap.Score
				}
				if s := score(flawed); s > 1 {
					found++
				}
				s := score(correct)
				if s > 1 {
					t.Fatalf("seed %d broke a correct limiter: score %v", seed, s)
				}
				best = max(best, s)
			}
			if found == 0 {
				t.Fatalf("no schedule of 20 broke the flawed limiter")
			}
			t.Logf("%d of 20 schedules broke it; the correct limiter's closest approach %.3f", found, best)
		})
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// firstRows returns, per client, the index of its first row.
func firstRows(tr *trace.Trace) []int {
	first := make([]int, len(tr.Clients))
	for i := range first {
		first[i] = -1
	}
	for i, r := range tr.Rows {
		if first[r.Client] < 0 {
			first[r.Client] = i
		}
	}
	return first
}

// TestFamilyShapes checks, over many seeds, the shape each family promises.
func TestFamilyShapes(t *testing.T) {
	l := demoLimit
	fwp := mustTarget(t, "fixed-window-published", l, demoSkews)
	tbp := mustTarget(t, "token-bucket-published", l, demoSkews)
	sliding := mustTarget(t, "sliding-log", l, nil)
	bucket := mustTarget(t, "token-bucket", l, nil)
	fixed := mustTarget(t, "fixed-window", l, nil)
	w := l.Window
	shapes := []struct {
		family string
		tg     Target
		// ok reports whether tr has the family's shape, and why not.
		ok func(tr *trace.Trace, frame []time.Duration) string
	}{
		{"window-boundary", fixed, func(tr *trace.Trace, bs []time.Duration) string {
			// Rows within half a window before and after one boundary.
			for _, b := range bs {
				before, after := 0, 0
				for _, r := range tr.Rows {
					if r.At >= b-w/2 && r.At < b {
						before++
					}
					if r.At >= b && r.At <= b+w/2 {
						after++
					}
				}
				if before > 0 && after > 0 {
					return ""
				}
			}
			return "no rows on both sides of a boundary"
		}},
		{"window-boundary", fwp, func(tr *trace.Trace, bs []time.Duration) string {
			// On the clients' own clocks: rows on both sides of the minute boundary.
			before, after := 0, 0
			for _, r := range tr.Rows {
				if at := r.At + tr.SkewOf(r.Client); at < bs[0] {
					before++
				} else {
					after++
				}
			}
			if before == 0 || after == 0 {
				return fmt.Sprintf("%d rows before and %d after the boundary on the clients' clocks", before, after)
			}
			return ""
		}},
		{"refill-point", bucket, func(tr *trace.Trace, _ []time.Duration) string {
			// A drain of most of the capacity, then rows after it.
			first := tr.Rows[0].At
			n := 0
			for _, r := range tr.Rows {
				if r.At-first <= l.Window/time.Duration(l.Limit) {
					n++
				}
			}
			if n < int(l.Capacity())-3 || n == len(tr.Rows) {
				return fmt.Sprintf("%d rows in the drain, %d in all", n, len(tr.Rows))
			}
			return ""
		}},
		{"first-hit", sliding, func(tr *trace.Trace, _ []time.Duration) string {
			t0 := tr.Rows[0].At
			if len(tr.Rows) > 1 && tr.Rows[1].At == t0 {
				return "the first request is not alone"
			}
			near, after := 0, 0
			for _, r := range tr.Rows[1:] {
				switch {
				case r.At >= t0+w/2 && r.At < t0+w:
					near++
				case r.At >= t0+w:
					after++
				}
			}
			if after == 0 || near+after < int(l.Limit) {
				return fmt.Sprintf("%d rows near the window's end, %d after it", near, after)
			}
			return ""
		}},
		{"anchored", bucket, func(tr *trace.Trace, _ []time.Duration) string {
			// The first request alone, then rows on both sides of a whole number of periods
			// after it, for some period the bucket may count from it.
			t0 := tr.Rows[0].At
			if len(tr.Rows) > 1 && tr.Rows[1].At == t0 {
				return "the first request is not alone"
			}
			for _, q := range []time.Duration{w, w / 2, w / 4, w / 20, w / 10, w / 4, w / 2} {
				for k := time.Duration(1); t0+k*q <= DefaultSpan; k++ {
					at, before, after := t0+k*q, 0, 0
					for _, r := range tr.Rows[1:] {
						before += b2i(r.At < at && r.At >= at-60*time.Millisecond)
						after += b2i(r.At >= at && r.At <= at+120*time.Millisecond)
					}
					if before > 0 && after > 0 {
						return ""
					}
				}
			}
			return "no rows on both sides of an instant anchored at the first request"
		}},
		{"key-expiry", firstHitTarget(l), func(tr *trace.Trace, _ []time.Duration) string {
			// Requests within 2 ms of the first one's instant plus a window, at most 300 µs
			// apart.
			t0, n := tr.Rows[0].At, 0
			for _, r := range tr.Rows {
				n += b2i(r.At >= t0+w-2*time.Millisecond && r.At <= t0+w+time.Millisecond)
			}
			if n < 10 {
				return fmt.Sprintf("%d rows around the key's expiry", n)
			}
			return ""
		}},
		{"skewed-newcomer", fwp, func(tr *trace.Trace, _ []time.Duration) string {
			// Some client with another offset first appears after at least a limit's worth of
			// rows from the others.
			for c, i := range firstRows(tr) {
				if i >= int(l.Limit)-3 && tr.SkewOf(uint16(c)) != tr.SkewOf(tr.Rows[0].Client) {
					return ""
				}
			}
			return "no newcomer with another clock offset after a drain"
		}},
		{"skew-alternation", tbp, func(tr *trace.Trace, _ []time.Duration) string {
			turns := 0
			for i := 1; i < len(tr.Rows); i++ {
				if tr.SkewOf(tr.Rows[i].Client) != tr.SkewOf(tr.Rows[i-1].Client) {
					turns++
				}
			}
			if turns < 3 {
				return fmt.Sprintf("%d turns between clock offsets", turns)
			}
			return ""
		}},
		{"spike", fixed, func(tr *trace.Trace, _ []time.Duration) string {
			for i := 0; i < len(tr.Rows); {
				j, cs := i, map[uint16]bool{}
				for ; j < len(tr.Rows) && tr.Rows[j].At == tr.Rows[i].At; j++ {
					cs[tr.Rows[j].Client] = true
				}
				if len(cs) >= 2 {
					return ""
				}
				i = j
			}
			return "no instant with two clients"
		}},
		{"after-drain", fixed, func(tr *trace.Trace, _ []time.Duration) string {
			// A steady rate above the limit's from the start.
			n := 0
			for _, r := range tr.Rows {
				if r.At < DefaultSpan/4 {
					n++
				}
			}
			if float64(n) < 1.1*l.RatePerSecond()*(DefaultSpan/4).Seconds() {
				return fmt.Sprintf("%d rows in the first quarter", n)
			}
			return ""
		}},
		{"poisson", fixed, func(tr *trace.Trace, _ []time.Duration) string {
			rate := float64(len(tr.Rows)) / DefaultSpan.Seconds()
			if rate < 0.25*l.RatePerSecond() || rate > 40*l.RatePerSecond() {
				return fmt.Sprintf("rate %.1f/s", rate)
			}
			return ""
		}},
		{"on-off", fixed, func(tr *trace.Trace, _ []time.Duration) string {
			// Rows closer than the limit's rate, and at least one silence ten times longer.
			var short, long bool
			unit := l.Window / time.Duration(l.Limit)
			for i := 1; i < len(tr.Rows); i++ {
				d := tr.Rows[i].At - tr.Rows[i-1].At
				short = short || d < unit
				long = long || d >= w/10
			}
			if len(tr.Rows) > 1 && (!short || !long && tr.Span() < DefaultSpan-w) {
				return fmt.Sprintf("short gaps %v, a silence %v", short, long)
			}
			return ""
		}},
	}
	for _, sh := range shapes {
		t.Run(sh.family+"/"+sh.tg.Algorithm, func(t *testing.T) {
			f, _ := FamilyNamed(sh.family)
			bs := boundaries(FrameOf(sh.tg, Bounds{}), DefaultSpan)
			bad := 0
			for seed := range uint64(50) {
				if why := sh.ok(f.Make(sh.tg, Bounds{}, seed), bs); why != "" {
					bad++
					t.Logf("seed %d: %s", seed, why)
				}
			}
			// A seed may draw a burst clamped to the span's edge; most must have the shape.
			if bad > 5 {
				t.Errorf("%d of 50 schedules lack the family's shape", bad)
			}
		})
	}
}
