package scenarios

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/trace"
)

// TraceDuration is the duration a scenario that replays t with the given warmup takes when the
// file gives none: until just after the trace's last row (a row due at the run's end would not
// be sent) and the end of its last fault, and at least load.MinDuration.
func TraceDuration(t *trace.Trace, warmup time.Duration) time.Duration {
	end := t.Span()
	for _, f := range t.Faults {
		end = max(end, f.At+f.Duration)
	}
	return max(load.MinDuration, end-warmup+time.Millisecond)
}

// trace reads arrival.trace: the trace file n names, relative to the scenario file's directory.
// Every problem of the trace file is a problem of the scenario, with the trace file's name, line
// and column.
func (d *decoder) trace(n *yaml.Node, a *arrival.Arrival) {
	name, ok := d.str(n, "arrival.trace")
	if !ok {
		return
	}
	if name == "" {
		d.fail(n, "arrival.trace", "must name a trace file (.csv or .jsonl)")
		return
	}
	a.TraceFile = name
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(d.file), name)
	}
	t, err := trace.Read(path)
	var te *trace.Errors
	switch {
	case errors.As(err, &te):
		for _, p := range te.Problems {
			field := "arrival.trace"
			if p.Field != "" {
				field += " " + p.Field
			}
			if p.Column > 0 {
				// A scenario's problems name no column (see Errors); a trace's need it.
				p.Msg = fmt.Sprintf("column %d: %s", p.Column, p.Msg)
			}
			p.Field = field
			d.probs = append(d.probs, p)
		}
	case err != nil:
		d.fail(n, "arrival.trace", "%v", err)
	default:
		a.Trace = t
	}
}

// checkTrace checks a scenario that replays a trace: the trace names every row's subject, client,
// clock offset and cost, so keys, cost, clock_skew and seed are refused, and the run must last
// past the trace's last row.
func (c *checker) checkTrace(a *arrival.Arrival) {
	for _, f := range []string{"keys", "cost", "clock_skew", "seed"} {
		if c.s.present(f) || c.s.flags[f] != "" {
			c.add(f, "cannot be combined with arrival.trace: the trace names each request's subject, client, clock offset and cost")
		}
	}
	if a.Trace == nil {
		return // the trace's own problems are reported
	}
	if end := c.s.TotalDuration(); a.Trace.Span() >= end {
		c.add("duration", "the trace's last request is at %s, not before the run's end (warmup + duration = %s); leave duration out to run until just after it",
			a.Trace.Span(), end)
	}
}
