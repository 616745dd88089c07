package hunt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/result"
)

// FileName is the name of hunt.json in a hunt's results directory; it marks the directory as
// a hunt's.
const FileName = "hunt.json"

// Reproducer names what replays e's violation, relative to hunt.json: the reproducer scenario,
// else the shrunk trace, else the violating trace as found. e must have a Violation.
func (e *Entry) Reproducer() string {
	if s := e.Violation.Shrunk; s != nil {
		if s.Scenario != "" {
			return s.Scenario
		}
		return s.Trace
	}
	return e.Violation.Schedule.Trace
}

// Verdict returns nil when f's entries are what the scenario's expectations expect, else an
// error naming each surprise, which fails the hunt: a violation of an algorithm listed neither
// under expect.violations nor under expect.may_violate (Entry.ExpectedViolation), and an
// algorithm listed under expect.violations (which must be broken) that held within the budget.
func Verdict(f *File, expect result.Expect) error {
	var broken, held []string
	for _, e := range f.Entries {
		switch {
		case e.Violation != nil && !e.ExpectedViolation:
			broken = append(broken, fmt.Sprintf("%s on %s broke %s (reproducer: %s)", e.Algorithm, e.Topology, e.Contract, e.Reproducer()))
		case e.Violation == nil && slices.Contains(expect.Violations, e.Algorithm):
			held = append(held, fmt.Sprintf("%s on %s held %s in %d trials (closest approach %.3f)", e.Algorithm, e.Topology, e.Contract, e.Trials, e.BestScore))
		}
	}
	var errs []error
	if len(broken) > 0 {
		errs = append(errs, fmt.Errorf("%d violation(s) not listed under expect.may_violate:\n  %s", len(broken), strings.Join(broken, "\n  ")))
	}
	if len(held) > 0 {
		errs = append(errs, fmt.Errorf("%d algorithm(s) listed under expect.violations not broken within the budget (a longer --budget or another --seed may find it):\n  %s",
			len(held), strings.Join(held, "\n  ")))
	}
	return errors.Join(errs...)
}

// WriteSummary writes one line per entry of f under a header: algorithm, topology, trials, best
// score, and whether it held or broke its contract; for a violation, the size of the schedule
// found and of its reproducer (requests and clients, as the reproducer's trace and scenario
// have them), and what replays it from the directory the hunt ran in (ReplayCommand; dir is the
// results directory as the hunt was given it).
func WriteSummary(w io.Writer, f *File, dir string) {
	fmt.Fprintf(w, "%-30s %-8s %7s %10s  %s\n", "ALGORITHM", "TOPOLOGY", "TRIALS", "BEST", "RESULT")
	for _, e := range f.Entries {
		res := "held"
		if v := e.Violation; v != nil {
			res = "VIOLATION"
			if e.ExpectedViolation {
				res = "violation (expected)"
			}
			res += ": " + requestsText(v.Schedule.Size.size())
			if sh := v.Shrunk; sh != nil {
				res += " → " + requestsText(sh.Size.size())
				if sh.Minimal {
					res += " (1-minimal)"
				}
			}
			res += "; " + ReplayCommand(dir, &e)
		}
		fmt.Fprintf(w, "%-30s %-8s %7d %10.3f  %s\n", e.Algorithm, e.Topology, e.Trials, e.BestScore, res)
	}
}

// Write writes o into dir: every trace and reproducer scenario, hunt.json, and the report
// (WriteReport). It stops at the first error.
func (o *Outcome) Write(dir string) error {
	if err := writeFiles(dir, o.Traces, o.Scenarios); err != nil {
		return err
	}
	var js bytes.Buffer
	if err := o.File.Write(&js); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), js.Bytes(), 0o644); err != nil {
		return err
	}
	_, err := WriteReport(dir, o.File)
	return err
}

// writeFiles writes every trace and scenario into dir by its name, stopping at the first error.
func writeFiles(dir string, traces map[string]*trace.Trace, scenarios map[string][]byte) error {
	for name, t := range traces {
		if err := trace.Write(filepath.Join(dir, name), t); err != nil {
			return err
		}
	}
	for name, y := range scenarios {
		if err := os.WriteFile(filepath.Join(dir, name), y, 0o644); err != nil {
			return err
		}
	}
	return nil
}
