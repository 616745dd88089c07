package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/report"
)

// TestListTable: `limitbench list` exits 0 and fits 120 columns (issue 31): a row per
// registered algorithm with its clock, memory and contract for the default limit (wrapped onto
// the lines below when long), and under the table, for each, its origin and its known flaw or
// correction in full. `list --wide` has all of that on one line per algorithm.
func TestListTable(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"list"}, &out, &errb); code != exitOK {
		t.Fatalf("list: exit %d, stderr %q", code, errb.String())
	}
	var wide, errw bytes.Buffer
	if code := run([]string{"list", "--wide"}, &wide, &errw); code != exitOK {
		t.Fatalf("list --wide: exit %d, stderr %q", code, errw.String())
	}
	lines := strings.Split(out.String(), "\n")
	for i, line := range lines {
		if n := utf8.RuneCountInString(line); n > report.TerminalWidth {
			t.Errorf("line %d of list is %d columns; want at most %d:\n%s", i+1, n, report.TerminalWidth, line)
		}
	}
	// A row and its continuation lines, and the paragraph under the table, by name.
	table, notes := map[string]string{}, map[string]string{}
	name := ""
	for _, line := range lines {
		switch f := strings.Fields(line); {
		case len(f) == 0:
		case strings.HasPrefix(line, " ") && name != "":
			table[name] += " " + strings.TrimSpace(line)
			notes[name] += " " + strings.TrimSpace(line)
		case strings.HasSuffix(f[0], ":"):
			name = strings.TrimSuffix(f[0], ":")
			notes[name] = line
		default:
			name = f[0]
			table[name] = line
		}
	}
	wideRows := map[string]string{}
	for _, line := range strings.Split(wide.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			wideRows[f[0]] = line
		}
	}
	for _, a := range algorithms.All() {
		d := a.Describe()
		c, err := a.Contract(algorithms.Limit{Limit: 100, Window: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{c.String(), d.Clock.String(), d.Memory} {
			if !strings.Contains(table[d.Name], want) {
				t.Errorf("row of %s lacks %q:\n%s", d.Name, want, table[d.Name])
			}
		}
		for _, want := range []string{d.Origin, d.Flaw, d.Corrected} {
			if !strings.Contains(strings.Join(strings.Fields(notes[d.Name]), " "), strings.Join(strings.Fields(want), " ")) {
				t.Errorf("the note on %s lacks %q:\n%s", d.Name, want, notes[d.Name])
			}
			if !strings.Contains(wideRows[d.Name], want) {
				t.Errorf("wide row of %s lacks %q:\n%s", d.Name, want, wideRows[d.Name])
			}
		}
	}
}

// TestListJSON: --json prints every algorithm once, in name order, published ones with a flaw.
func TestListJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"list", "--json", "-limit", "7", "-window", "250ms"}, &out, &errb); code != exitOK {
		t.Fatalf("list --json: exit %d, stderr %q", code, errb.String())
	}
	var got []listEntry
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out.String())
	}
	names := algorithms.Names()
	if len(got) != len(names) {
		t.Fatalf("list --json: %d entries, want %d (%v)", len(got), len(names), names)
	}
	for i, e := range got {
		if e.Name != names[i] {
			t.Errorf("entry %d is %s, want %s", i, e.Name, names[i])
		}
		if e.Contract == "" || e.Origin == "" || e.Memory == "" || e.KeysPerSubject < 1 {
			t.Errorf("%s: incomplete entry %+v", e.Name, e)
		}
		if strings.HasSuffix(e.Name, "-published") && e.Flaw == "" {
			t.Errorf("%s: published design without a known flaw", e.Name)
		}
	}
	for _, e := range got {
		if e.Name == "resource-consumer" && !strings.Contains(e.Contract, "sliding-window(7, 250ms, granularity 1µs)") {
			t.Errorf("resource-consumer contract %q, want it rendered for -limit 7 -window 250ms", e.Contract)
		}
	}
}

// TestListBadInput: bad flags, a bad limit and stray arguments exit 2.
func TestListBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"list", "-nope"},
		{"list", "-limit", "0"},
		{"list", "-window", "1500us"},
		{"list", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitBadInput {
				t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitBadInput, errb.String())
			}
		})
	}
}
