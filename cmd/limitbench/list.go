package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/report"
)

func init() {
	register("list", "list the built-in algorithms: origin, contract, clock, keys, memory, known flaw", runList)
}

// listEntry is one algorithm as `limitbench list --json` prints it.
type listEntry struct {
	Name   string `json:"name"`
	Origin string `json:"origin"`
	// Contract is rendered for the limit given with -limit and -window.
	Contract       string `json:"contract"`
	Clock          string `json:"clock"`
	KeysPerSubject int    `json:"keys_per_subject"`
	Memory         string `json:"memory"`
	Cost           bool   `json:"cost"`
	Flaw           string `json:"flaw,omitempty"`
	Corrected      string `json:"corrected,omitempty"`
}

// runList prints every registered algorithm as a table, or as a JSON array with --json.
func runList(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("list", "[--json] [--wide] [--limit N] [--window D] [--consumer-limit N]", stderr)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	wide := fs.Bool("wide", false, "print every column, origin, known flaw and correction included, one line per algorithm however wide (default: a table of 120 columns, each algorithm's origin, flaw and correction under it)")
	limit := fs.Int64("limit", 100, "permits per window used to render each contract")
	window := fs.Duration("window", time.Second, "window used to render each contract")
	consumer := fs.Int64("consumer-limit", 0, "per-consumer limit of the resource-consumer contracts (0: the same as -limit)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("unexpected arguments: %q", fs.Args()))
	}
	l := algorithms.Limit{Limit: *limit, Window: *window, ConsumerLimit: *consumer}
	if err := l.Validate(); err != nil {
		return badInput(err)
	}
	entries, err := listEntries(l)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	if *wide {
		return writeWideList(stdout, entries, l)
	}
	return writeList(stdout, entries, l)
}

// listEntries describes every registered algorithm, sorted by name, with its contract for l.
func listEntries(l algorithms.Limit) ([]listEntry, error) {
	all := algorithms.All()
	entries := make([]listEntry, 0, len(all))
	for _, a := range all {
		d := a.Describe()
		c, err := a.Contract(l)
		if err != nil {
			return nil, fmt.Errorf("contract of %s: %w", d.Name, err)
		}
		entries = append(entries, listEntry{
			Name:           d.Name,
			Origin:         d.Origin,
			Contract:       c.String(),
			Clock:          d.Clock.String(),
			KeysPerSubject: d.KeysPerSubject,
			Memory:         d.Memory,
			Cost:           d.Cost,
			Flaw:           d.Flaw,
			Corrected:      d.Corrected,
		})
	}
	return entries, nil
}

// writeList prints entries as a table within report.TerminalWidth columns (the contract wrapped
// when it is long), then a paragraph per algorithm with its origin, and its known flaw or what
// was corrected, wrapped to the same width.
func writeList(w io.Writer, entries []listEntry, l algorithms.Limit) error {
	t := report.Table{Header: []string{"NAME", "CLOCK", "KEYS", "MEMORY/SUBJECT", "COST>1", "CONTRACT"},
		Right: []bool{false, false, true}, Wrap: 5}
	for _, e := range entries {
		t.Rows = append(t.Rows, []string{e.Name, e.Clock, fmt.Sprint(e.KeysPerSubject), e.Memory, yesNo(e.Cost), e.Contract})
	}
	var b strings.Builder
	if err := t.Write(&b, report.TerminalWidth); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, e := range entries {
		text := e.Origin + "."
		if e.Flaw != "" {
			text += " Known flaw: " + e.Flaw + "."
		}
		if e.Corrected != "" {
			text += " Corrected: " + e.Corrected + "."
		}
		b.WriteString(report.Paragraph(e.Name+": ", text, report.TerminalWidth))
	}
	fmt.Fprintf(&b, "\n%d algorithms; contracts shown for limit %d per %s (-limit, -window); --wide prints one line each.\n",
		len(entries), l.Limit, l.Window)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeWideList prints entries as one table, one line per algorithm, every field a column.
func writeWideList(w io.Writer, entries []listEntry, l algorithms.Limit) error {
	t := report.Table{Header: []string{"NAME", "ORIGIN", "CONTRACT", "CLOCK", "KEYS/SUBJECT", "MEMORY/SUBJECT", "COST>1", "KNOWN FLAW", "CORRECTED"},
		Wrap: -1}
	for _, e := range entries {
		t.Rows = append(t.Rows, []string{e.Name, e.Origin, e.Contract, e.Clock, fmt.Sprint(e.KeysPerSubject), e.Memory, yesNo(e.Cost),
			orDash(e.Flaw), orDash(e.Corrected)})
	}
	if err := t.Write(w, 0); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d algorithms; contracts shown for limit %d per %s (-limit, -window).\n", len(entries), l.Limit, l.Window)
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
