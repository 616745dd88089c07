package segment

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/judge"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/measure"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// ErrNotOneRun means the results given to Merge are not the segments of one run: a result that
// is not a segment's, segments of different runs (run id, scenario or number of segments), a
// segment given twice, or segments that measured different algorithms. The message names the
// directories and segments concerned.
var ErrNotOneRun = errors.New("the results are not the segments of one run")

// Part is one segment's partial result, as `limitbench run --segment` wrote it into Dir. The
// admission logs of its entries are read from Dir by Merge as streams, one entry at a time,
// unless an entry's Partial holds their bytes already.
type Part struct {
	Dir    string
	Result *result.Result
}

// Merge checks that parts are every segment of one run, each once, and merges them into the
// result that one unsegmented run would have given: for each algorithm, the segments' histograms,
// timelines, errors by class and admission logs merged (every aggregator merges exactly), the
// counts added up, and the merged history verified as one, with accuracy against an exact limiter
// over the merged offered sequence. The history is verified by the streaming checker, fed the
// segments' logs merged by time, which gives what the whole-history checker gives (see
// verify.MeasurementStream); as in a run, the sections that need the whole history in memory
// (the violation explorer, fairness, the window use) are given only when the logs hold at most
// measure.KeepEvents events in all, and the entry says they were left out otherwise. A log in
// the older, uncompressed encoding is still read, whole (verify.LogReader). The result has one result.Generator per segment and is judged
// against the scenario's expectations and thresholds: failures lists, one sentence each, what
// makes the merged run fail (empty: it passed).
//
// A segment may be missing (its generator died, was preempted or never finished): the merge is
// then partial, and result.Result.MissingSegments names what is missing. Missing admissions can
// only add to a window's count, so a definite violation among the segments merged stays definite,
// except under a first-hit window, where a missing earlier request would have started the windows
// elsewhere: there it becomes a possible violation and the verdict inconclusive. Every pass is
// inconclusive, the missing segments named in its reasons, and each entry warns that its accuracy
// is against the present segments' requests only.
//
// The server's figures are the first present segment's, its CPU time per decision divided by the
// number of segments merged (every generator's decisions ran in the window it measured). The
// segments' node watches are kept per segment in their own results; when one saw Redis change, a
// merged failed verdict becomes inconclusive (the merged history is not cut into epochs).
//
// Errors wrap ErrNotOneRun, or load.ErrEncoding for a partial whose encodings do not decode, or
// algorithms.ErrUnknownAlgorithm (custom scripts are not merged yet).
func Merge(parts []Part) (res *result.Result, failures []string, err error) {
	return MergeShard(parts, Shard{Index: 0, Count: 1})
}

// MergeShard is Merge verifying only the scopes of shard sh (see Shard, Holds): with more than
// one shard, each entry's verification, accuracy and timeline limit cover the subjects (or, for
// a contract counted per client across subjects, the clients) whose name's hash falls in sh,
// and an entry whose contract counts both is verified whole by shard 0 and not at all by the
// others (result.Entry.Shard says which). The result is then a shard's (result.Result.Shard),
// which Join joins with the other shards'; it is not judged (failures is nil): Join judges the
// joined result. Shard{0, 1} is Merge.
func MergeShard(parts []Part, sh Shard) (res *result.Result, failures []string, err error) {
	missing, err := checkOneRun(parts)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].Result.Segment.Index < parts[j].Result.Segment.Index })
	first := parts[0].Result
	st := first.Scenario.Settings
	if st == nil {
		return nil, nil, fmt.Errorf("%w: %s: the result has no scenario settings", ErrNotOneRun, parts[0].Dir)
	}
	res = &result.Result{
		Schema:          result.SchemaVersion,
		Scenario:        first.Scenario,
		Environment:     first.Environment,
		StartedAt:       first.StartedAt,
		FinishedAt:      first.FinishedAt,
		Reference:       first.Reference,
		MissingSegments: missing,
	}
	for _, p := range parts {
		r := p.Result
		res.MergedFrom = append(res.MergedFrom, p.Dir)
		if r.StartedAt.Before(res.StartedAt) {
			res.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(res.FinishedAt) {
			res.FinishedAt = r.FinishedAt
		}
		if r.CutShort {
			res.CutShort = true
			res.CutShortNote = strings.TrimPrefix(res.CutShortNote+"; ", "; ") +
				fmt.Sprintf("segment %d: %s", r.Segment.Index, r.CutShortNote)
		}
		res.Generators = append(res.Generators, generatorOf(r))
	}
	topoStart := map[string]int{}
	for i := range first.Entries {
		e, err := mergeEntry(parts, i, st, missing, sh)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := topoStart[e.Topology]; !ok {
			topoStart[e.Topology] = len(res.Entries)
		}
		res.Entries = append(res.Entries, *e)
	}
	for _, at := range topoStart {
		res.Relate(at)
	}
	if sh.Count > 1 {
		res.Shard = &result.Shard{Index: sh.Index, Count: sh.Count, Hash: "fnv1a-64"}
		return res, nil, nil
	}
	s, err := judgeScenario(st)
	if err != nil {
		return nil, nil, err
	}
	return res, judge.Run(s, res), nil
}

// checkOneRun returns an error wrapping ErrNotOneRun that names every problem at once, or nil and
// the segments missing, as "I/N".
func checkOneRun(parts []Part) (missing []string, err error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no results given", ErrNotOneRun)
	}
	var problems []string
	var ref *result.Segment
	var refDir string
	seen := map[int][]string{}
	for _, p := range parts {
		sg := p.Result.Segment
		if sg == nil {
			problems = append(problems, fmt.Sprintf("%s is not a segment's result (run with --segment)", p.Dir))
			continue
		}
		if ref == nil {
			ref, refDir = sg, p.Dir
		}
		switch {
		case sg.RunID != ref.RunID:
			problems = append(problems, fmt.Sprintf("%s is of run %q, %s of run %q", p.Dir, sg.RunID, refDir, ref.RunID))
		case sg.ScenarioHash != ref.ScenarioHash:
			problems = append(problems, fmt.Sprintf("%s ran another scenario (or seed, or overrides) than %s", p.Dir, refDir))
		case sg.Count != ref.Count:
			problems = append(problems, fmt.Sprintf("%s is one of %d segments, %s one of %d", p.Dir, sg.Count, refDir, ref.Count))
		case !sameServers(sg.Servers, ref.Servers):
			problems = append(problems, fmt.Sprintf("%s measured Redis %s, %s measured Redis %s: the segments of a run must share one Redis",
				p.Dir, describeServers(sg.Servers), refDir, describeServers(ref.Servers)))
		}
		seen[sg.Index] = append(seen[sg.Index], p.Dir)
	}
	if ref != nil && len(problems) == 0 {
		for i := range ref.Count {
			switch dirs := seen[i]; {
			case len(dirs) == 0:
				missing = append(missing, fmt.Sprintf("%d/%d", i, ref.Count))
			case len(dirs) > 1:
				problems = append(problems, fmt.Sprintf("segment %d/%d is given twice: %s", i, ref.Count, strings.Join(dirs, " and ")))
			}
		}
	}
	if len(problems) == 0 {
		// Every segment measured the same algorithms, each with its partial.
		want := entryNames(parts[0].Result)
		for _, p := range parts {
			if got := entryNames(p.Result); !slices.Equal(got, want) {
				problems = append(problems, fmt.Sprintf("%s measured %s, %s measured %s", p.Dir, strings.Join(got, " "),
					parts[0].Dir, strings.Join(want, " ")))
			}
			for _, e := range p.Result.Entries {
				if e.Partial == nil {
					problems = append(problems, fmt.Sprintf("%s: %s has no partial result", p.Dir, e.Name()))
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w:\n  %s", ErrNotOneRun, strings.Join(problems, "\n  "))
	}
	return missing, nil
}

func entryNames(r *result.Result) []string {
	var out []string
	for _, e := range r.Entries {
		out = append(out, e.Name())
	}
	return out
}

// mergeEntry merges entry i of every part (the parts sorted by segment); missing names the
// segments a partial merge goes without, and sh the shard it verifies. The parts' admission
// logs are read as streams and merged by time into the streaming checker (see verifyMerged), so
// that what it holds follows the contract's windows, not the run's length.
func mergeEntry(parts []Part, i int, st *result.Settings, missing []string, sh Shard) (*result.Entry, error) {
	e0 := &parts[0].Result.Entries[i]
	name := e0.Name()
	var rec *measure.Recording
	var counts load.Counts
	var scheduled uint64
	var duration time.Duration
	var canceled, disrupted bool
	measuredFrom := int64(0)
	var srcs []*logSource
	defer func() {
		for _, s := range srcs {
			_ = s.close() // read only; closed twice at worst
		}
	}()
	for k, p := range parts {
		e := &p.Result.Entries[i]
		pt := e.Partial
		r, logs, err := decodePart(p.Dir, e)
		srcs = append(srcs, logs...)
		if err != nil {
			return nil, err
		}
		if !r.Log.OneClock {
			return nil, fmt.Errorf("%w: %s: %s: the admission log is not on the server's clock", ErrNotOneRun, p.Dir, name)
		}
		if k == 0 {
			rec = r
			measuredFrom = pt.MeasuredFromUS
		} else if err := rec.Merge(r); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", p.Dir, name, err)
		}
		measuredFrom = min(measuredFrom, pt.MeasuredFromUS)
		counts.Add(pt.Counts)
		scheduled += pt.Scheduled
		duration = max(duration, time.Duration(pt.DurationNS))
		canceled = canceled || pt.Canceled
		disrupted = disrupted || (e.Watch != nil && len(e.Watch.Events) > 0)
	}
	pt := e0.Partial
	res := &load.Result{
		Plan:     load.Plan{Warmup: time.Duration(pt.WarmupNS), Bin: time.Duration(pt.BinNS)},
		Duration: duration, Canceled: canceled, Counts: counts, Scheduled: scheduled,
		Subjects: st.Keys.Names(), Clients: clientNames(st.Clients),
	}
	if st.Wait != nil {
		res.Plan.Wait = *st.Wait
	}
	res.Behind = load.Behind(scheduled, counts.Missed, counts.Late)
	if s := duration.Seconds(); s > 0 {
		res.OfferedRate = float64(scheduled) / s
		res.AchievedRate = float64(counts.Requests) / s
		res.Throughput = float64(counts.Allowed+counts.Denied) / s
	}
	a, err := mergedAlgorithm(e0.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	contract, err := a.Contract(st.Limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	vm := rec.Verification(res, contract, a.Model(st.Limit))
	vm.Start, vm.SpeedOnly = measuredFrom, st.SpeedOnly.Covers(e0.Algorithm)
	by := splitBy(contract)
	dropped, err := verifyMerged(rec, &vm, res, srcs, sh.keep(by, res.Subjects, res.Clients))
	srcs = nil // closed by verifyMerged
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotOneRun, name, err)
	}
	vm.Warnings.Dropped += dropped
	srv := e0.Server
	srv.CPUUSecPerDecision = result.Round3(srv.CPUUSecPerDecision / float64(len(parts)))
	e := rec.Entry(e0.Algorithm, e0.Topology, res, vm, e0.Custom, &srv)
	_ = rec.Close() // temporary files only
	if sh.Count > 1 {
		e.Shard = by
	}
	if disrupted && e.Verification.Verdict == verify.Fail {
		e.Verification.Verdict = verify.Inconclusive
		e.Verification.Reasons = append(e.Verification.Reasons,
			"a segment's node watch saw Redis change during the measurement; the merged history is not cut at the change, so its violations are not definite (see the segments' results)")
	}
	partialEntry(&e, missing, contract)
	for _, p := range parts {
		for _, w := range p.Result.Entries[i].Warnings {
			w.Message = fmt.Sprintf("segment %d: %s", p.Result.Segment.Index, w.Message)
			e.Warnings = append(e.Warnings, w)
		}
	}
	return &e, nil
}

// verifyMerged reads the segments' logs srcs, merged by time, into the streaming checker that
// rec.MergedStream makes for vm (its Start set), and returns how many events did not fit the
// merged history's Base (dropped, as AdmissionLog.Merge drops them). When the logs hold at most
// measure.KeepEvents events in all, vm's logs get the whole history too, for the sections the
// stream does not give (the violation explorer, fairness, the window use), as a run keeps them.
// Only the events keep holds are verified (keep nil: every event). It closes srcs.
func verifyMerged(rec *measure.Recording, vm *verify.Measurement, res *load.Result, srcs []*logSource,
	keep func(verify.Event) bool) (dropped uint64, err error) {
	base := rec.Log.Origin
	var total int64
	for _, s := range srcs {
		s.shift = s.r.Head.Origin - base
		total += s.r.N
	}
	kept := total <= measure.KeepEvents
	ms, err := rec.MergedStream(*vm, base, res.Subjects, res.Clients, kept)
	if err != nil {
		for _, s := range srcs {
			_ = s.close()
		}
		return 0, err
	}
	var measured, warmup []verify.Event
	n := 0
	var m logMerge
	err = m.run(srcs, func(e verify.Event, w bool) {
		if keep != nil && !keep(e) {
			return
		}
		ms.Add(e, w)
		if kept {
			if w {
				warmup = append(warmup, e)
			} else {
				measured = append(measured, e)
			}
		}
		// The merge gives events in Lo order: none of a smaller Lo follows.
		if n++; n%mergeAdvance == 0 {
			ms.Advance(e.Lo())
			if mergeRetained != nil {
				mergeRetained(ms.Retained())
			}
		}
	})
	if err != nil {
		return 0, err
	}
	if kept {
		vm.Log.Events = measured
		if vm.Warmup != nil {
			vm.Warmup.Events = warmup
		}
	}
	return m.Dropped, nil
}

// mergeAdvance is how many events the merge gives the stream between two Advances (a variable
// for tests, which advance after every few events).
var mergeAdvance = 1 << 10

// mergeRetained, when set (by tests), is told the events the stream holds after each Advance.
var mergeRetained func(n int64)

// partialEntry marks e, merged without the segments missing (none: nothing to do), as partial:
// its verdict as partialVerdict says, and a warning that its figures are the present segments'.
func partialEntry(e *result.Entry, missing []string, contract algorithms.Contract) {
	if len(missing) == 0 {
		return
	}
	partialVerdict(&e.Verification, missing, verify.HasFirstHit(contract))
	e.Warnings = append(e.Warnings, result.Warning{Kind: result.WarningPartialMerge, Message: fmt.Sprintf(
		"merged without segment(s) %s: throughput, latency and accuracy are of the present segments' requests only (the exact limiter did not see the missing ones)",
		strings.Join(missing, ", "))})
}

// mergedAlgorithm returns the algorithm an entry names: a built-in one or the reference script.
func mergedAlgorithm(name string) (algorithms.Algorithm, error) {
	if name == algorithms.ReferenceName {
		return algorithms.Reference(), nil
	}
	a, err := algorithms.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w (merge verifies built-in algorithms only; custom scripts are not merged yet)", err)
	}
	return a, nil
}

func clientNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c%d", i)
	}
	return out
}

// decodePart decodes the aggregators of entry e of the segment in dir but its admission logs,
// which it opens as streams (the bytes its Partial holds, else the files in dir it names): r.Log
// and r.Warmup hold their heads (origin, clock and counts), without events. The sources are
// returned even with an error, for the caller to close.
func decodePart(dir string, e *result.Entry) (r *measure.Recording, srcs []*logSource, err error) {
	pt := e.Partial
	for _, warmup := range []bool{false, true} {
		if warmup && pt.WarmupLog == "" {
			break
		}
		s, err := openLog(dir, e, warmup)
		if err != nil {
			return nil, srcs, fmt.Errorf("%w: %s: %w", ErrNotOneRun, dir, err)
		}
		srcs = append(srcs, s)
	}
	r = &measure.Recording{Histograms: &load.Histograms{}, Timeline: &load.Timeline{}, Errors: load.NewErrors()}
	err = errors.Join(r.Histograms.UnmarshalBinary(pt.Histograms), r.Timeline.UnmarshalBinary(pt.Timeline),
		r.Errors.UnmarshalBinary(pt.Errors))
	if err != nil {
		return nil, srcs, fmt.Errorf("%s: %s: %w", dir, e.Name(), err)
	}
	head := srcs[0].r.Head
	r.Log = &head
	if len(srcs) > 1 {
		wh := srcs[1].r.Head
		r.Warmup = &wh
	}
	return r, srcs, nil
}

// generatorOf returns the per-generator row of a segment's result r: its requests and lateness
// over every entry but the reference script's, its mean throughput per entry, how late it
// started at worst, and its clock offset with the smallest error.
func generatorOf(r *result.Result) result.Generator {
	g := result.Generator{Segment: r.Segment.Index}
	var tp float64
	n, measured := 0, 0
	for i := range r.Entries {
		e := &r.Entries[i]
		pt := e.Partial
		if pt == nil {
			continue
		}
		if n == 0 || pt.ClockErrorUS < g.ClockErrorUS {
			g.ClockOffsetUS, g.ClockErrorUS = pt.ClockOffsetUS, pt.ClockErrorUS
		}
		n++
		g.LateStartMS = max(g.LateStartMS, pt.LateStartMS)
		if r.IsReference(e) {
			continue
		}
		g.Requests += e.Requests
		g.Late += e.Late
		tp += e.ThroughputRPS
		measured++
	}
	if measured > 0 {
		g.ThroughputRPS = result.Round3(tp / float64(measured))
	}
	if g.Requests > 0 {
		g.LateFraction = float64(g.Late) / float64(g.Requests)
	}
	return g
}

// judgeScenario returns the part of a scenario judge.Run reads, from a result's settings.
func judgeScenario(st *result.Settings) (*scenarios.Scenario, error) {
	s := &scenarios.Scenario{Expect: st.Expect}
	for _, text := range st.Thresholds {
		th, err := scenarios.ParseThreshold(text)
		if err != nil {
			return nil, fmt.Errorf("%w: threshold %q: %w", ErrNotOneRun, text, err)
		}
		s.Thresholds = append(s.Thresholds, th)
	}
	return s, nil
}

// partialVerdict adjusts the verification of a history that lacks the requests of the missing
// segments. A pass becomes inconclusive: the missing admissions could break the contract. A
// definite violation stays definite, since missing admissions only add to a window's count, unless
// the contract has a first-hit window (firstHit): a missing earlier request would have started the
// key's windows elsewhere, so its violations become possible ones and a fail inconclusive.
func partialVerdict(v *verify.Summary, missing []string, firstHit bool) {
	which := strings.Join(missing, ", ")
	switch {
	case v.Verdict == verify.Pass:
		v.Verdict = verify.Inconclusive
		v.Reasons = append(v.Reasons, fmt.Sprintf("segment(s) %s missing from the merge: no violation among the segments merged, "+
			"but the missing segments' admissions could break the contract", which))
		v.Finding = fmt.Sprintf("No violation among the segments merged; without segment(s) %s the contract cannot be said to have held.", which)
	case v.DefiniteViolations > 0 && firstHit:
		v.PossibleViolations += v.DefiniteViolations
		v.DefiniteViolations = 0
		v.ViolationTimesS, v.ViolationTimesOmitted = nil, 0
		if v.Verdict == verify.Fail {
			v.Verdict = verify.Inconclusive
		}
		v.Reasons = append(v.Reasons, fmt.Sprintf("segment(s) %s missing from the merge: the contract's windows start at a key's first request, "+
			"and a missing earlier request would have started them elsewhere, so the violations found are possible, not definite", which))
		v.Finding = fmt.Sprintf("Violations are possible among the segments merged; without segment(s) %s, where the first-hit windows began is not known.", which)
	case v.DefiniteViolations > 0:
		v.Reasons = append(v.Reasons, fmt.Sprintf("found among the segments merged, without segment(s) %s: missing admissions can only add to them", which))
	}
}
