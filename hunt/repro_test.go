package hunt

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
)

// TestCustomReproScenario: the reproducer scenario of a custom algorithm carries its definition
// as the scenario wrote it, with the script's path made relative to the results directory and
// the comments left out, and loads there: the script it reads is the scenario's.
func TestCustomReproScenario(t *testing.T) {
	tmp := t.TempDir()
	for _, d := range []string{"scripts", "scenarios", filepath.Join("results", "deep")} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lua := "local n = redis.call('INCR', KEYS[1])\nreturn {n <= tonumber(ARGV[1]) and 1 or 0, n}\n"
	if err := os.WriteFile(filepath.Join(tmp, "scripts", "mine.lua"), []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(tmp, "scenarios", "custom.yaml")
	if err := os.WriteFile(scenario, []byte(`limit: {limit: 5, window: 1s}
algorithms:
  # a counter that never expires
  - name: mine
    script: ../scripts/mine.lua   # relative to this file
    keys: ["c:{{tag}}"]
    args: ["{{limit}}"]
    allowed: {element: 1, equals: 1}
    contract: {kind: sliding-window, limit: "{{limit}}", window: 1s}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "results", "deep")
	algs, err := customEntryYAML(scenario, "mine", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(algs, "script: ../../scripts/mine.lua\n") || strings.Contains(algs, "#") {
		t.Errorf("algorithms field:\n%s\nwant the script relative to %s and no comments", algs, dir)
	}
	tr := &trace.Trace{Clients: []string{"c0"}, Subjects: []string{"s0"}, Rows: []trace.Row{{At: 0, Cost: 1}, {At: time.Millisecond, Cost: 1}}}
	if err := trace.Write(filepath.Join(dir, "t.csv"), tr); err != nil {
		t.Fatal(err)
	}
	y := reproScenario(s, "mine", "single", "t.csv", arrival.Align{Every: time.Second, Offset: 900 * time.Millisecond}, tr, algs, 3, "results/deep/repro.yaml")
	repro := filepath.Join(dir, "repro.yaml")
	if err := os.WriteFile(repro, y, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := scenarios.Load(repro)
	if err != nil {
		t.Fatalf("reproducer does not load: %v\n%s", err, y)
	}
	e := back.ResolveAlgorithms()
	want := s.Algorithms[0].Custom
	if len(e) != 1 || e[0].Custom == nil || e[0].Custom.Source != want.Source ||
		!slices.Equal(e[0].Custom.Args, want.Args) || !cmp.Equal(e[0].Custom.Contract, want.Contract) {
		t.Errorf("reproducer's algorithm %+v; want the scenario's %+v", e, want)
	}
	if !slices.Equal(back.Expect.Violations, []string{"mine"}) || back.Clients != 3 ||
		back.Arrival.Align != (arrival.Align{Every: time.Second, Offset: 900 * time.Millisecond}) {
		t.Errorf("reproducer expects %v, has %d clients, aligned %+v; want [mine], 3, 1s+900ms", back.Expect.Violations, back.Clients, back.Arrival.Align)
	}
	if !strings.Contains(string(y), "limitbench run results/deep/repro.yaml") || !strings.Contains(back.Description, "(2 requests from 1 client)") {
		t.Errorf("reproducer's replay command or description:\n%s", y)
	}
	if _, err := customEntryYAML(scenario, "nope", dir); err == nil || !strings.Contains(err.Error(), `no custom algorithm "nope"`) {
		t.Errorf("customEntryYAML of an unknown name: %v", err)
	}
}

// TestReproScenarioFaults: a reproducer of a schedule that places faults lists them in its
// faults: field, with the duration they need, and loads back as the same schedule: its faults as
// the corpus reads them (scheduled) and its duration the trace's rows and faults. A scenario
// fault a hunt does not place is no corpus entry.
func TestReproScenarioFaults(t *testing.T) {
	dir := t.TempDir()
	s := writeScenario(t, dir, "src.yaml", "limit: {limit: 20, window: 1s}\nalgorithms: [gcra]\n")
	tr := &trace.Trace{Clients: []string{"c0"}, Subjects: []string{"s0"},
		Rows:   []trace.Row{{At: 0, Cost: 1}, {At: 900 * time.Millisecond, Cost: 1}},
		Faults: []trace.Fault{{At: 500 * time.Millisecond, Kind: "restart"}, {At: 1200 * time.Millisecond, Kind: "pause", Duration: 100 * time.Millisecond}}}
	if err := trace.Write(filepath.Join(dir, "r.csv"), tr); err != nil {
		t.Fatal(err)
	}
	yaml := reproScenario(s, "gcra", "single", "r.csv", arrival.Align{Every: time.Second, Offset: 500 * time.Millisecond}, tr,
		"algorithms: [gcra]\n", 2, "r.yaml")
	path := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(path, yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := scenarios.Load(path)
	if err != nil {
		t.Fatalf("the reproducer does not load: %v\n%s", err, yaml)
	}
	got, err := scheduled(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tr.Faults, got); diff != "" {
		t.Errorf("faults read back (-placed +read):\n%s\n%s", diff, yaml)
	}
	if want := scenarios.TraceDuration(tr, 0); r.Duration != want {
		t.Errorf("duration %s; want %s, the rows' and the faults'", r.Duration, want)
	}
	r.Faults[0].Target.Kind = "replica"
	if _, err := scheduled(r); err == nil || !strings.Contains(err.Error(), "faults[0]") {
		t.Errorf("a fault on a replica read as a hunt's: %v", err)
	}
}
