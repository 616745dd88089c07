package hunt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
)

// A corpus is a directory of reproducers that hunts saved, kept so that a flaw once found is
// tried again, the way Hypothesis' example database and rapid's fail files keep failing
// examples. Each entry is a scenario, NAME.yaml, and its trace, NAME.csv, beside it: it replays
// one schedule against one algorithm, with the limit and at the frame the schedule was found at,
// and it expects nothing, so the contract must hold: `limitbench run` of an entry fails (exit 1)
// when the violation is found again. `limitbench hunt --corpus DIR` replays the entries of every
// algorithm it hunts before it searches, and saves each new reproducer there.

// corpusFamily begins the family of a candidate taken from the corpus: "corpus:NAME".
const corpusFamily = "corpus:"

// Known is a schedule a hunt runs before any family's: an entry of its corpus.
type Known struct {
	// Name is the entry's file name, as the candidate's family shows it ("corpus:NAME").
	Name  string
	Trace *trace.Trace
}

// CorpusEntry is one reproducer of a corpus.
type CorpusEntry struct {
	// File is the entry's scenario file.
	File string
	// Algorithm is the one algorithm the entry replays against, with Limit, at Align.
	Algorithm string
	Limit     algorithms.Limit
	Align     arrival.Align
	// Trace is the schedule, canonical.
	Trace *trace.Trace
}

// LoadCorpus reads every *.yaml of dir as a corpus entry, in the order of their names. A dir
// that does not exist is an empty corpus (a hunt creates it when it saves the first entry).
// The problems of every file are returned at once, each naming its file: a scenario that does
// not load (as scenarios.Load reports it), or one that is not an entry (not exactly one
// algorithm, or an arrival that is not a trace). The error matches scenarios.ErrInvalid.
func LoadCorpus(dir string) ([]CorpusEntry, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: corpus %s: %w", scenarios.ErrInvalid, dir, err)
	}
	slices.Sort(files)
	var out []CorpusEntry
	var errs []error
	for _, f := range files {
		s, err := scenarios.Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		algs := s.ResolveAlgorithms()
		if len(algs) != 1 || s.Arrival == nil || s.Arrival.Trace == nil {
			errs = append(errs, fmt.Errorf("%w: %s: not a corpus entry: a corpus entry replays a trace (arrival.trace) against one algorithm; found %d algorithms",
				scenarios.ErrInvalid, f, len(algs)))
			continue
		}
		t := s.Arrival.Trace.Canonical()
		if t.Faults, err = scheduled(s); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: not a corpus entry: %w", scenarios.ErrInvalid, f, err))
			continue
		}
		out = append(out, CorpusEntry{File: f, Algorithm: algs[0].Name, Limit: s.Limit, Align: s.Arrival.Align, Trace: t})
	}
	return out, errors.Join(errs...)
}

// scheduled returns the faults of s as a schedule places them (trace.Fault): each of a kind a
// schedule may place, on the master, with the recovery of the limit's window, as a hunt's
// reproducer lists them; an error names the first that is not.
func scheduled(s *scenarios.Scenario) ([]trace.Fault, error) {
	var out []trace.Fault
	for i, f := range s.Faults {
		master := f.Target == (redisenv.Selector{}) || f.Target == (redisenv.Selector{Kind: redisenv.SelectMaster})
		if !slices.Contains(scenarios.NemesisKinds, f.Kind) || !master ||
			f.Recovery != s.Limit.Window || f.Link != scenarios.LinkClient || f.Drop || f.Mode != "" {
			return nil, fmt.Errorf("faults[%d] (%s) is not a fault a hunt places (%s on the master, as hunt --faults writes them)",
				i, f.Name(), scenarios.NemesisNames())
		}
		out = append(out, trace.Fault{At: f.At, Kind: string(f.Kind), Duration: f.Duration})
	}
	return out, nil
}

// corpusFor returns the entries of corpus that replay against the algorithm name with limit l
// at frame, as Known schedules, and how many other entries of name were left out (saved with
// another limit or frame: their schedules aim elsewhere).
func corpusFor(corpus []CorpusEntry, name string, l algorithms.Limit, frame arrival.Align) (known []Known, other int) {
	for _, e := range corpus {
		switch {
		case e.Algorithm != name:
		case e.Limit != l || e.Align != frame:
			other++
		default:
			known = append(known, Known{Name: filepath.Base(e.File), Trace: e.Trace})
		}
	}
	return known, other
}

// fromCorpus says where c came from when it is a corpus entry or a mutation of one (" from the
// corpus's NAME"), and nothing otherwise.
func fromCorpus(c *Candidate) string {
	name, ok := strings.CutPrefix(c.Family, corpusFamily)
	switch {
	case !ok:
		return ""
	case c.Mutations > 0:
		return " from a mutation of the corpus's " + name
	}
	return " from the corpus's " + name
}

// inCorpus reports whether corpus holds an entry of the algorithm name with the schedule t.
func inCorpus(corpus []CorpusEntry, name string, t *trace.Trace) bool {
	h := traceHash(t.Canonical())
	return slices.ContainsFunc(corpus, func(e CorpusEntry) bool { return e.Algorithm == name && traceHash(e.Trace) == h })
}

// CorpusFiles are the entries a hunt saves into its corpus directory Dir: scenarios and their
// traces, by file name.
type CorpusFiles struct {
	Dir       string
	Traces    map[string]*trace.Trace
	Scenarios map[string][]byte
	saved     map[string]bool // the algorithms and schedule hashes of the entries, "ALG HASH"
}

// Saved returns the paths of the entries' scenarios in Dir, sorted.
func (c *CorpusFiles) Saved() []string {
	var out []string
	for name := range c.Scenarios {
		out = append(out, filepath.Join(c.Dir, name))
	}
	slices.Sort(out)
	return out
}

// Write creates Dir when it does not exist and writes every entry into it, stopping at the
// first error. An entry of the same name is the same schedule of the same algorithm, and is
// written over.
func (c *CorpusFiles) Write() error {
	if len(c.Scenarios) == 0 {
		return nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	return writeFiles(c.Dir, c.Traces, c.Scenarios)
}

// save adds t, the reproducer of q on topo found at frame, to c as a new corpus entry, unless
// c is nil or the corpus (or c) holds t for q already: a schedule of an algorithm is saved once,
// on the topology it was first found on. Its name is the algorithm's, the topology's and the
// schedule's hash: "ALG-TOPO-HASH.yaml" and ".csv".
func (p *Plan) save(c *CorpusFiles, q quarry, topo string, frame arrival.Align, t *trace.Trace) error {
	alg := q.target.Algorithm
	h := traceHash(t.Canonical())
	key := fmt.Sprintf("%s %x", alg, h)
	if c == nil || c.saved[key] || inCorpus(p.corpus, alg, t) {
		return nil
	}
	algs, err := p.algorithmsYAML(q, c.Dir)
	if err != nil {
		return err
	}
	if c.saved == nil {
		c.saved = map[string]bool{}
	}
	c.saved[key] = true
	name := fmt.Sprintf("%s-%s-%08x", fileSafe(alg), topo, uint32(h))
	c.Traces[name+".csv"] = t
	var b bytes.Buffer
	s := p.o.Scenario
	fmt.Fprintf(&b, "# Saved by limitbench hunt from %s into its corpus: a schedule that broke %s's contract.\n", s.File, alg)
	fmt.Fprintf(&b, "# limitbench run %s fails (exit 1) while the flaw is there; limitbench hunt --corpus %s replays it first.\n",
		filepath.Join(c.Dir, name+".yaml"), c.Dir)
	b.WriteString(scheduleYAML(s, name, topo, name+".csv", frame, t, p.o.Lab.Workers(t),
		fmt.Sprintf("A schedule limitbench hunt found that broke %s's contract (%s); the contract must hold.", alg, requestsText(SizeOf(t)))))
	b.WriteString(algs)
	c.Scenarios[name+".yaml"] = b.Bytes()
	return nil
}
