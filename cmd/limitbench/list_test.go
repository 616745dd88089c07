package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
)

// TestListTable: `limitbench list` exits 0 and has one row per registered algorithm, with its
// contract for the default limit, and the known flaw of every published design.
func TestListTable(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"list"}, &out, &errb); code != exitOK {
		t.Fatalf("list: exit %d, stderr %q", code, errb.String())
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	for _, a := range algorithms.All() {
		d := a.Describe()
		row, ok := rows[d.Name]
		if !ok {
			t.Errorf("no row for %s in:\n%s", d.Name, out.String())
			continue
		}
		c, err := a.Contract(algorithms.Limit{Limit: 100, Window: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{d.Origin, c.String(), d.Clock.String(), d.Memory, d.Flaw} {
			if !strings.Contains(row, want) {
				t.Errorf("row of %s lacks %q:\n%s", d.Name, want, row)
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
