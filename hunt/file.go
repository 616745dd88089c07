package hunt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/verify"
)

// Schema names the format of hunt.json.
const Schema = "limitbench/hunt/v1"

// ErrBadFile means a hunt.json cannot be read: not JSON, another schema, unknown fields.
var ErrBadFile = errors.New("invalid hunt.json")

// File is hunt.json: the settings of one `limitbench hunt` and one Entry per algorithm and
// topology hunted. Durations are seconds, instants µs since the Unix epoch (as in result.json).
// Schedules are trace files beside it, named by their entries.
type File struct {
	Schema   string `json:"schema"`
	Scenario string `json:"scenario"`
	// Seed is the hunt's --seed; BudgetS its --budget per algorithm; Trials its --trials (0:
	// none); SpanS the longest schedule.
	Seed    uint64  `json:"seed"`
	BudgetS float64 `json:"budget_s"`
	Trials  int     `json:"max_trials,omitempty"`
	SpanS   float64 `json:"span_s"`
	// Faults are the kinds of fault the search placed (hunt --faults; Bounds.Faults); none
	// when it placed none.
	Faults []string `json:"faults,omitempty"`
	// CutShort is set when the hunt was interrupted: entries hold what was found so far.
	CutShort bool    `json:"cut_short,omitempty"`
	Entries  []Entry `json:"algorithms"`
}

// Entry is the hunt of one algorithm on one topology.
type Entry struct {
	Algorithm string `json:"algorithm"`
	Topology  string `json:"topology"`
	// Contract is the contract hunted, as algorithms.Contract.String writes it.
	Contract string `json:"contract"`
	// Clock is the algorithm's clock source (server, client).
	Clock string `json:"clock"`
	// SkewsS are the clock offsets clients could have, in seconds.
	SkewsS []float64 `json:"skews_s,omitempty"`
	// Families are the families that applied.
	Families []string `json:"families"`
	// Align is where every schedule's time zero lay on the Unix clock (Result.Frame): in
	// hunt.json {every_s, offset_s}, as result.json writes a scenario's arrival.align.
	Align arrival.Align `json:"align"`
	// Trials counts the schedules run; ElapsedS is the search's time; Stop why it ended
	// (violation, trials, time, canceled, exhausted).
	Trials int `json:"trials"`
	// Corpus counts the reproducers of the corpus (hunt --corpus) run first, among Trials.
	Corpus   int     `json:"corpus,omitempty"`
	ElapsedS float64 `json:"elapsed_s"`
	Stop     string  `json:"stop"`
	// WaitedS is the time the trials of every phase (search, shrink, confirmation) spent
	// waiting for the frame (Result.Waited): up to a period per batch.
	WaitedS float64 `json:"waited_s,omitempty"`
	// BestScore is the best schedule's score: above 1 for a definite violation; at most 1 is
	// the closest approach of an algorithm never broken.
	BestScore float64 `json:"best_score"`
	// Best is the schedule with the best score and Closest where it came closest.
	Best    *Schedule `json:"best,omitempty"`
	Closest *Closest  `json:"closest,omitempty"`
	// Violation is the first schedule that broke the contract, and its reproducer.
	Violation *Found `json:"violation,omitempty"`
	// ExpectedViolation is set when the scenario lists the algorithm under expect.violations
	// or expect.may_violate: a violation found does not fail the hunt.
	ExpectedViolation bool `json:"expected_violation,omitempty"`
	// Plot is the best schedule's trial as the report draws it (admitted against allowed, from
	// the trial's own log); nil when no trial ran or its log was not kept.
	Plot *Plot `json:"plot,omitempty"`
	// FaultCost is the schedule whose faults cost the most permits (Result.Costliest): what a
	// loss of the state let through, which is not the algorithm's doing; nil when no fault
	// cost any.
	FaultCost *FaultCost `json:"fault_cost,omitempty"`
	// Excerpt is the requests around the worst violation of the violating schedule's trial (the
	// best schedule's when none broke the contract and one may have), as report.html's explorer
	// draws them (verify.NewExcerpt, times from the trial's time zero); nil when its trial had no
	// violation, definite or possible.
	Excerpt *verify.Excerpt `json:"excerpt,omitempty"`
}

// Schedule describes one schedule that was run.
type Schedule struct {
	// Trace is its file, relative to hunt.json; empty when not written.
	Trace     string  `json:"trace,omitempty"`
	Family    string  `json:"family"`
	Mutations int     `json:"mutations"`
	Trial     int     `json:"trial"`
	Score     float64 `json:"score"`
	Size      SizeOut `json:"size"`
	// Faults name the faults the schedule placed ("restart master at 980ms"); none when it
	// placed none.
	Faults []string `json:"faults,omitempty"`
}

// FaultCost is the schedule whose faults cost the most permits, and what each of them did.
type FaultCost struct {
	Schedule Schedule `json:"schedule"`
	// Permits is the permits admitted beyond the contract because of the faults (the sum of
	// their excess).
	Permits int64                `json:"permits"`
	Faults  []verify.FaultReport `json:"faults"`
}

// SizeOut is a Size in hunt.json.
type SizeOut struct {
	Rows     int     `json:"rows"`
	Faults   int     `json:"faults,omitempty"`
	Clients  int     `json:"clients"`
	Subjects int     `json:"subjects"`
	Permits  int64   `json:"permits"`
	SkewS    float64 `json:"skew_s"`
	ExtentS  float64 `json:"extent_s"`
}

// Closest is the set of admissions that came closest to (or went furthest over) a limit: the
// verifier's closest approach (verify.LimitApproach) with its limit written out.
type Closest struct {
	// Limit is the limit's contract, without its Also.
	Limit string `json:"limit"`
	verify.Closest
	Score float64 `json:"score"`
}

// Found is a schedule that broke the contract.
type Found struct {
	// Schedule is the schedule as the search found it.
	Schedule Schedule `json:"schedule"`
	// Definite counts the definite violations of its trial; Worst is the worst.
	Definite int64 `json:"definite_violations"`
	Worst    Worst `json:"worst"`
	// Shrunk is its reproducer; nil when shrinking was off.
	Shrunk *Shrunk `json:"shrunk,omitempty"`
}

// Worst is verify.Where of the worst definite violation, with its limit written out.
type Worst struct {
	// Limit is the limit's contract, without its Also.
	Limit string `json:"limit"`
	verify.Where
}

// Shrunk is the reproducer: the shrunk trace and the scenario that replays it.
type Shrunk struct {
	Trace    string  `json:"trace"`
	Scenario string  `json:"scenario"`
	Size     SizeOut `json:"size"`
	// Replays counts the traces replayed while shrinking, Steps the smaller ones kept.
	Replays int `json:"replays"`
	Steps   int `json:"steps"`
	// Minimal: deleting any one row loses the violation.
	Minimal bool `json:"minimal"`
	// Confirm is the reproducer's confirmation (Budget.Confirm); absent when it was not
	// confirmed.
	Confirm *Confirmation `json:"confirm,omitempty"`
}

// Files names the files an Entry refers to, relative to hunt.json; empty names are left out.
type Files struct {
	// Best is the best schedule's trace, Found the violating one's as found, Shrunk the
	// reproducer's trace and Scenario the reproducer's scenario; Costliest the trace of the
	// schedule whose faults cost the most.
	Best, Found, Shrunk, Scenario, Costliest string
}

// NewEntry describes res, the hunt of one algorithm on topology, with the given file names.
func NewEntry(res *Result, topology string, files Files) Entry {
	e := Entry{
		Algorithm: res.Target.Algorithm,
		Topology:  topology,
		Contract:  res.Target.Contract.String(),
		Clock:     res.Target.Clock.String(),
		Families:  append([]string{}, res.Families...),
		Align:     res.Frame,
		Trials:    res.Trials,
		Corpus:    res.Corpus,
		ElapsedS:  res.Elapsed.Seconds(),
		Stop:      string(res.Stop),
		WaitedS:   res.Waited.Seconds(),
	}
	if res.Target.Clock == algorithms.ClockClient {
		for _, s := range res.Target.Skews {
			e.SkewsS = append(e.SkewsS, s.Seconds())
		}
	}
	if b := res.Best; b != nil {
		e.BestScore = b.Score()
		s := schedule(b, files.Best)
		e.Best = &s
		for _, l := range b.Approach.Limits {
			if l.Score == b.Score() && l.Score > 0 {
				e.Closest = &Closest{Limit: l.Contract.String(), Closest: l.Closest, Score: l.Score}
				break
			}
		}
	}
	if v := res.Violation; v != nil {
		f := &Found{Schedule: schedule(&v.Candidate, files.Found), Definite: v.Report.Definite()}
		for _, l := range v.Report.Limits {
			if l.Definite > 0 && (f.Worst.Limit == "" || l.Worst.Excess > f.Worst.Excess) {
				f.Worst = Worst{Limit: l.Contract.String(), Where: l.Worst}
			}
		}
		if sr := v.Shrunk; sr != nil {
			f.Shrunk = &Shrunk{Trace: files.Shrunk, Scenario: files.Scenario, Size: sizeOut(sr.To),
				Replays: sr.Calls, Steps: sr.Steps, Minimal: sr.Minimal}
			if c := v.Confirmation; c != nil {
				cc := *c
				f.Shrunk.Confirm = &cc
			}
		}
		e.Violation = f
	}
	if c := res.Costliest; c != nil {
		e.FaultCost = &FaultCost{Schedule: schedule(c, files.Costliest), Permits: c.Cost, Faults: c.Faults}
	}
	if b := res.Best; b != nil && b.Log != nil {
		e.Plot = plotOf(b.Log, res.Target.Contract, markOf(res))
		log := b.Log
		if v := res.Violation; v != nil && v.Candidate.Log != nil {
			log = v.Candidate.Log
		}
		// A log the checker refuses has no excerpt; the verdict above says why.
		e.Excerpt, _ = verify.NewExcerpt(res.Target.Contract, log, log.Base, 0)
	}
	return e
}

// markOf returns the set the plot of res's best schedule marks: the worst definite violation of
// the violation's trial, or else the best schedule's closest approach (none when it admitted
// nothing).
func markOf(res *Result) plotWhere {
	if v := res.Violation; v != nil && &v.Candidate == res.Best {
		var w plotWhere
		for _, l := range v.Report.Limits {
			if l.Definite > 0 && (w.lim.Kind == "" || l.Worst.Excess > w.permits-int64(w.allowed)) {
				x := l.Worst
				w = plotWhere{lim: l.Contract, violation: true, subject: x.Subject, client: x.Client, lo: x.Lo, hi: x.Hi,
					permits: x.Permits, allowed: float64(x.Allowed)}
			}
		}
		if w.lim.Kind == algorithms.TokenBucket {
			w.bucketC, w.bucketR = float64(w.lim.Capacity), ratePerS(w.lim)
		}
		if w.lim.Kind != "" {
			return w
		}
	}
	b := res.Best
	for _, l := range b.Approach.Limits {
		if l.Score == b.Score() && l.Score > 0 {
			c := l.Closest
			w := plotWhere{lim: l.Contract, violation: l.Score > 1, subject: c.Subject, client: c.Client, lo: c.Lo, hi: c.Hi,
				permits: c.Permits, allowed: c.Allowed}
			if w.lim.Kind == algorithms.TokenBucket {
				w.bucketC, w.bucketR = float64(w.lim.Capacity), ratePerS(w.lim)
			}
			return w
		}
	}
	return plotWhere{}
}

func schedule(c *Candidate, trace string) Schedule {
	return Schedule{Trace: trace, Family: c.Family, Mutations: c.Mutations, Trial: c.Trial, Score: c.Score(), Size: sizeOut(SizeOf(c.Trace)),
		Faults: FaultNames(c.Trace)}
}

// FaultNames names the faults t places, as a reproducer scenario lists them ("restart master at
// 980ms"), then the jumps of its clients' clocks ("clock of c2 jumps from 0s to 2s at 1.2s").
func FaultNames(t *trace.Trace) []string {
	var out []string
	for _, f := range t.Faults {
		d := ""
		if f.Duration > 0 {
			d = " for " + f.Duration.String()
		}
		out = append(out, fmt.Sprintf("%s master at %s%s", f.Kind, f.At, d))
	}
	for _, j := range t.Jumps {
		out = append(out, fmt.Sprintf("clock of %s jumps from %s to %s at %s", t.Clients[j.Client], t.SkewAt(j.Client, j.At-1), j.Skew, j.At))
	}
	return out
}

// size returns the rows, clients and subjects of s as a Size (for requestsText).
func (s SizeOut) size() Size { return Size{Rows: s.Rows, Clients: s.Clients, Subjects: s.Subjects} }

func sizeOut(s Size) SizeOut {
	return SizeOut{Rows: s.Rows, Faults: s.Faults, Clients: s.Clients, Subjects: s.Subjects, Permits: s.Permits,
		SkewS: s.Skew.Seconds(), ExtentS: s.Extent.Seconds()}
}

// Write writes f as indented JSON with a final newline. The output depends only on f.
func (f *File) Write(w io.Writer) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("write hunt.json: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write hunt.json: %w", err)
	}
	return nil
}

// ReadFile reads a hunt.json written by Write: strict (unknown fields are an error) and only of
// this Schema; errors wrap ErrBadFile.
func ReadFile(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read hunt.json: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more after the object", ErrBadFile)
	}
	if f.Schema != Schema {
		return nil, fmt.Errorf("%w: schema %q (want %q)", ErrBadFile, f.Schema, Schema)
	}
	return &f, nil
}
