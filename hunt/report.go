package hunt

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes f as the hunt section of a report: one table row per algorithm and
// topology (its best score, whether it broke its contract, and the reproducer's size against the
// schedule it was shrunk from), then, per algorithm, where it came closest or how it broke. The
// output depends only on f.
func (f *File) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Hunt\n\n")
	fmt.Fprintf(&b, "Scenario `%s`, seed %d, budget %gs per algorithm", f.Scenario, f.Seed, f.BudgetS)
	if f.Trials > 0 {
		fmt.Fprintf(&b, " or %d trials", f.Trials)
	}
	fmt.Fprintf(&b, ", schedules of at most %gs.", f.SpanS)
	if f.CutShort {
		b.WriteString(" **Interrupted: what was found so far.**")
	}
	b.WriteString(" A score is the largest ratio of permits admitted to permits allowed over any window or interval of the contract; above 1 is a definite violation.\n\n")
	b.WriteString("| algorithm | topology | contract | trials | best score | result | found → reproducer | reproducer |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, e := range f.Entries {
		result, sizes, repro := "held (closest approach)", "", ""
		if v := e.Violation; v != nil {
			result = "**violation**"
			if e.ExpectedViolation {
				result = "violation (expected)"
			}
			sizes = fmt.Sprintf("%d rows", v.Schedule.Size.Rows)
			if s := v.Shrunk; s != nil {
				sizes += fmt.Sprintf(" → %d rows, %d clients", s.Size.Rows, s.Size.Clients)
				if s.Scenario != "" {
					repro = fmt.Sprintf("`limitbench run %s`", s.Scenario)
				} else {
					repro = "`" + s.Trace + "`"
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d (%s) | %.3f | %s | %s | %s |\n", e.Algorithm, e.Topology, e.Contract, e.Trials, e.Stop,
			e.BestScore, result, sizes, repro)
	}
	for _, e := range f.Entries {
		fmt.Fprintf(&b, "\n### %s on %s\n\n", e.Algorithm, e.Topology)
		fmt.Fprintf(&b, "Families: %s. Time zero at %gs past a multiple of %gs.", strings.Join(e.Families, ", "), e.Align.OffsetS, e.Align.EveryS)
		if len(e.SkewsS) > 0 {
			fmt.Fprintf(&b, " Client clock offsets allowed: %v s.", e.SkewsS)
		}
		b.WriteString("\n\n")
		if v := e.Violation; v != nil {
			wst := v.Worst
			fmt.Fprintf(&b, "Broke %s at trial %d (family %s, %d mutations): %d definite violation(s); the worst admitted %d permits where %d were allowed, over [%d, %d] µs",
				wst.Limit, v.Schedule.Trial, v.Schedule.Family, v.Schedule.Mutations, v.Definite, wst.Permits, wst.Allowed, wst.LoUs, wst.HiUs)
			if wst.Subject != "" {
				fmt.Fprintf(&b, " for subject %s", wst.Subject)
			}
			if wst.Client != "" {
				fmt.Fprintf(&b, " and client %s", wst.Client)
			}
			b.WriteString(".\n")
			if s := v.Shrunk; s != nil {
				minimal := ""
				if s.Minimal {
					minimal = " (1-minimal: dropping any one request loses the violation)"
				}
				fmt.Fprintf(&b, "Shrunk from %d to %d requests%s in %d replays; reproducer trace `%s`", v.Schedule.Size.Rows, s.Size.Rows, minimal, s.Replays, s.Trace)
				if s.Scenario != "" {
					fmt.Fprintf(&b, ", replay it with `limitbench run %s`", s.Scenario)
				}
				b.WriteString(".\n")
			}
			continue
		}
		if c := e.Closest; c != nil {
			fmt.Fprintf(&b, "Never broken. Closest approach %.3f of %s: %d permits admitted where %g were allowed, over [%d, %d] µs",
				c.Score, c.Limit, c.Permits, c.Allowed, c.LoUs, c.HiUs)
			if c.Subject != "" {
				fmt.Fprintf(&b, " for subject %s", c.Subject)
			}
			b.WriteString(".")
		} else {
			b.WriteString("Never broken; no trial admitted anything.")
		}
		if e.Best != nil && e.Best.Trace != "" {
			fmt.Fprintf(&b, " Best schedule: `%s` (family %s, trial %d).", e.Best.Trace, e.Best.Family, e.Best.Trial)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
