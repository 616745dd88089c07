package main

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// replayCommand is the replay command hunt prints for a reproducer scenario.
var replayCommand = regexp.MustCompile(`limitbench run (\S+-repro\.yaml)`)

// TestHuntOffByOneWindow is issue 29's regression test of a hunt that could not shrink an
// off-by-one and then called it minimal: examples/custom's off_by_one_window.lua admits 21
// where fixed-window(20, 1s) allows 20, a score of 1.05. A hunt of it, run in a directory of
// its own with a relative --out, finds the violation and shrinks it to fewer rows than the
// schedule found; the summary names the reproducer's requests and clients as its trace has
// them, and the replay command it prints works from that directory (a fail verdict, which the
// reproducer expects: exit 0). When hunt.json claims the reproducer 1-minimal, each row is
// deleted in turn and the rest replayed twice: none may break the contract.
func TestHuntOffByOneWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and hunts on a real Redis")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	bin := buildBinary(t)
	cwd := t.TempDir()
	example, err := filepath.Abs("../../examples/custom/off_by_one_window.yaml")
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBinIn(t, cwd, bin, "hunt", "--backend", "process", "--topology", "single", "--budget", "40s",
		"--out", filepath.Join("results", "obo"), example)
	if code != exitOK {
		t.Fatalf("hunt exit %d; want 0 (the violation is expected)\n%s\n%s", code, stdout, stderr)
	}
	out := filepath.Join(cwd, "results", "obo")
	_, by := readHunt(t, out)
	e := by["my-off-by-one-window"]
	if e.Violation == nil || e.Violation.Shrunk == nil || e.Violation.Shrunk.Scenario == "" {
		t.Fatalf("my-off-by-one-window: %+v; want a violation with a reproducer scenario\n%s", e, stderr)
	}
	v, sh := e.Violation, e.Violation.Shrunk
	t.Logf("trial %d, score %.3f: %d rows shrunk to %d in %d replays, minimal %v, confirm %+v", v.Schedule.Trial, v.Schedule.Score,
		v.Schedule.Size.Rows, sh.Size.Rows, sh.Replays, sh.Minimal, sh.Confirm)
	if sh.Size.Rows >= v.Schedule.Size.Rows || sh.Confirm == nil || sh.Confirm.Broke != sh.Confirm.Replays {
		t.Errorf("reproducer of %d rows from %d, confirmation %+v; want fewer rows, confirmed in every replay", sh.Size.Rows, v.Schedule.Size.Rows, sh.Confirm)
	}
	repro, err := trace.Read(filepath.Join(out, sh.Trace))
	if err != nil {
		t.Fatal(err)
	}
	counts := regexp.MustCompile(`→ (\d+) requests? from (\d+) clients?`).FindStringSubmatch(stdout)
	if counts == nil || counts[1] != strconv.Itoa(len(repro.Rows)) || counts[2] != strconv.Itoa(len(repro.Clients)) {
		t.Errorf("summary %q; want the reproducer's %d requests from %d clients", counts, len(repro.Rows), len(repro.Clients))
	}

	// The printed command, from the directory the hunt ran in.
	m := replayCommand.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no replay command in the summary:\n%s", stdout)
	}
	code, rout, rerr := runBinIn(t, cwd, bin, "run", "--backend", "process", "--no-reference", "--out", filepath.Join(cwd, "replay"), m[1])
	if code != exitOK || !strings.Contains(rout, "my-off-by-one-window") {
		t.Errorf("%s from %s: exit %d; want 0 (the violation found again, as the reproducer expects)\n%s\n%s", m[0], cwd, code, rout, rerr)
	}
	if sh.Minimal {
		checkMinimal(t, example, e, repro)
	}
}

// checkMinimal replays, twice each, every deletion of one row of repro, the reproducer of e (a
// hunt of the scenario file scenario), at the hunt's frame on a single node through the CLI's
// lab: none may break the contract.
func checkMinimal(t *testing.T, scenario string, e hunt.Entry, repro *trace.Trace) {
	t.Helper()
	s, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tgt, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySingle})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tgt.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	lab := huntLab(s.Call, t.Logf, nil, s.Name)
	alg, err := lab.Resolve(s, s.ResolveAlgorithms()[0])
	if err != nil {
		t.Fatal(err)
	}
	contract, err := alg.Contract(s.Limit)
	if err != nil {
		t.Fatal(err)
	}
	var batch []*trace.Trace
	for i := range repro.Rows {
		c := repro.Clone()
		c.Rows = slices.Delete(c.Rows, i, i+1)
		batch = append(batch, c.Canonical(), c.Canonical())
	}
	logs, err := lab.Trial(ctx, tgt, alg, s.Limit, e.Align, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		ap, err := verify.ApproachOf(contract, l.Log)
		if err != nil {
			t.Fatal(err)
		}
		if ap.Score > 1 {
			t.Errorf("claimed 1-minimal, but without row %d the reproducer broke the contract again (score %.3f)", i/2, ap.Score)
		}
	}
}

// discreteRefill is a token bucket that adds R tokens every P ms counted from the bucket's
// first request, not from the epoch, as some public scripts do (issue 29 item 3): a burst that
// straddles a refill instant, on a full bucket, gets C + R at once.
const discreteRefill = `-- KEYS[1] {tokens, last}; ARGV: capacity C, tokens per refill R, period P (ms), cost.
local capacity, r, p, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) * 1000, tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local st = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens, last = tonumber(st[1]), tonumber(st[2])
if tokens == nil then
  tokens, last = capacity, now
else
  local n = math.floor((now - last) / p)
  if n > 0 then
    tokens = math.min(capacity, tokens + n * r)
    last = last + n * p
  end
end
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'last', string.format('%d', last))
redis.call('PEXPIRE', KEYS[1], 60000)
return {allowed, tokens, now}
`

// discreteRefillBudget is the smallest budget tried that found the discrete-refill flaw with each
// of seeds 1 to 5 (found at trial 4, 13, 4, 4, 4); at 5 s seed 1 ran 8 trials and missed it.
const discreteRefillBudget = "10s"

// TestHuntDiscreteRefill is issue 29's regression test of a hunt that missed a token bucket whose
// refills are counted from its first request (none found in 84 trials): C = 10, 5 tokens every
// 500 ms, held to token-bucket(10, 10/1s). The hunt must break it within a budget well under
// the default 60 s; the anchored family (a first request, then the allowance on both sides of a
// whole number of periods after it) aims at exactly this.
func TestHuntDiscreteRefill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and hunts on a real Redis")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	bin := buildBinary(t)
	tmp := t.TempDir()
	writeFile(t, tmp, "discrete_refill.lua", discreteRefill)
	scenario := writeFile(t, tmp, "refill.yaml", `limit: {limit: 10, window: 1s, burst: 10}
algorithms:
  - name: discrete-refill
    script: discrete_refill.lua
    keys: ["tb:{{tag}}"]
    args: ["10", "5", "500", "{{cost}}"]
    allowed: {element: 1, equals: 1}
    time: {element: 3, unit: us}
    contract: {kind: token-bucket, capacity: 10, rate: 10, per: 1s}
expect:
  violations: [discrete-refill]
`)
	out := filepath.Join(tmp, "out")
	code, stdout, stderr := runBin(t, bin, "hunt", "--backend", "process", "--budget", discreteRefillBudget, "--out", out, scenario)
	_, by := readHunt(t, out)
	e := by["discrete-refill"]
	if code != exitOK || e.Violation == nil {
		t.Fatalf("hunt exit %d, %+v; want the flaw found within %s\n%s\n%s", code, e, discreteRefillBudget, stdout, stderr)
	}
	t.Logf("found at trial %d (family %s, score %.3f), %d rows shrunk to %d", e.Violation.Schedule.Trial, e.Violation.Schedule.Family,
		e.Violation.Schedule.Score, e.Violation.Schedule.Size.Rows, e.Violation.Shrunk.Size.Rows)
}
