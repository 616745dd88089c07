package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/limitbench/limitbench/algorithms"
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
	fs := newFlagSet("list", "[--json] [--limit N] [--window D] [--consumer-limit N]", stderr)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
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

// writeList prints entries as an aligned table; the known flaw of each published design is the
// last column ("-" for the others).
func writeList(w io.Writer, entries []listEntry, l algorithms.Limit) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tORIGIN\tCONTRACT\tCLOCK\tKEYS/SUBJECT\tMEMORY/SUBJECT\tCOST>1\tKNOWN FLAW")
	for _, e := range entries {
		cost, flaw := "no", e.Flaw
		if e.Cost {
			cost = "yes"
		}
		if flaw == "" {
			flaw = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n",
			e.Name, e.Origin, e.Contract, e.Clock, e.KeysPerSubject, e.Memory, cost, flaw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d algorithms; contracts shown for limit %d per %s (-limit, -window).\n",
		len(entries), l.Limit, l.Window)
	return err
}
