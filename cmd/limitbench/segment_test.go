package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// TestSegmentFlagsGoldens: a bad segment, a custom script (which merge cannot verify), a segmented run of several scenarios or repeats, a run
// id that cannot go in a key, a --start-at that is not a time, is past or more than a day ahead, and the segment flags without a
// segment are bad input, exit 2, before anything starts.
func TestSegmentFlagsGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	tmp := t.TempDir()
	smoke := suite + "smoke.yaml"
	runArgs := func(args ...string) []string {
		return append(append([]string{"run", "--redis", "127.0.0.1:1", "--out", filepath.Join(tmp, "out")}, args...), smoke)
	}
	cases := []cliCase{
		{"segment-out-of-range", runArgs("--segment", "3/3"), exitBadInput},
		{"segment-not-i-of-n", runArgs("--segment", "two"), exitBadInput},
		{"segment-and-segments", runArgs("--segment", "0/2", "--segments", "2"), exitBadInput},
		{"segments-without-index", runArgs("--segments", "3"), exitBadInput},
		{"segment-repeat", runArgs("--segment", "0/2", "--repeat", "2"), exitBadInput},
		{"segment-run-id", runArgs("--segment", "0/2", "--run-id", "a b"), exitBadInput},
		{"segment-start-at", runArgs("--segment", "0/2", "--start-at", "noon"), exitBadInput},
		// Issue 28 item 7: a --start-at in the past sent nothing and exited 0; one in 2099 waited
		// until killed.
		{"segment-start-at-past", runArgs("--segment", "0/2", "--start-at", "2001-01-01T00:00:00Z"), exitBadInput},
		{"segment-start-at-far", runArgs("--segment", "0/2", "--start-at", "2099-01-01T00:00:00Z"), exitBadInput},
		// Issue 28 item 8: merge refused a custom script only once every segment had run.
		{"segment-custom-script", []string{"run", "--redis", "127.0.0.1:1", "--out", filepath.Join(tmp, "out"), "--segment", "0/2",
			"../../examples/custom/counter.yaml"}, exitBadInput},
		{"run-id-without-segment", runArgs("--run-id", "x"), exitBadInput},
		{"merge-nothing", []string{"merge"}, exitBadInput},
		{"segment-closed-loop", []string{"run", "--redis", "127.0.0.1:1", "--out", filepath.Join(tmp, "out"), "--clients", "2",
			"--segment", "0/3", suite + "saturation.yaml"}, exitBadInput},
	}
	runGoldens(t, bin, cases, 5*time.Second, map[string]string{"$TMP": tmp})
}

// TestSegmentsFromTheEnvironment: --segments N takes the segment from $JOB_COMPLETION_INDEX, and
// refuses a value that is not one.
func TestSegmentsFromTheEnvironment(t *testing.T) {
	s, err := scenarios.Load(suite + "smoke.yaml")
	if err != nil {
		t.Fatal(err)
	}
	loaded := []*scenarios.Scenario{s}
	set := map[string]bool{"segments": true}
	f := segmentFlags{segments: 3, lead: time.Second}
	for _, tt := range []struct {
		env  string
		want int
	}{{"0", 0}, {"2", 2}, {"3", -1}, {"-1", -1}, {"x", -1}} {
		t.Setenv(indexEnv, tt.env)
		g, err := f.config(set, loaded, 1)
		switch {
		case tt.want < 0 && err == nil:
			t.Errorf("$%s=%s: config = %v; want an error", indexEnv, tt.env, g)
		case tt.want >= 0 && (err != nil || g.Index != tt.want || g.Count != 3):
			t.Errorf("$%s=%s: config = %v, %v; want segment %d/3", indexEnv, tt.env, g, err, tt.want)
		case tt.want >= 0 && !strings.HasPrefix(g.RunID, "seg-"):
			t.Errorf("$%s=%s: run id %q; want one derived from the scenario's hash", indexEnv, tt.env, g.RunID)
		}
	}
}

// TestSegmentProcessesMerge: three `limitbench run --segment I/3` processes, each with a clock of
// its own, against one real cluster, then `limitbench merge`: the merged result holds every
// generator's requests and a per-generator table, `report` reads it, merge refuses duplicate and
// mixed segments with exit 2, naming them, and merges two of the three as a partial result: their
// requests only, the missing segment named, gcra's pass inconclusive (exit 1).
func TestSegmentProcessesMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Redis under load")
	}
	t.Parallel() // a child process, no state of this one: overlaps the other waits
	bin := buildBinary(t)
	tgt := redistest.Cluster(t).Target
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", tgt.Password), Host: strings.Join(tgt.Masters(), ",")}
	tmp := t.TempDir()
	scenario := writeFile(t, tmp, "seg.yaml", `version: 1
name: seg
topologies: [cluster]
duration: 1500ms
seed: 3
clients: 4
arrival: {rate: 120}
keys: {count: 3, distribution: uniform}
limit: {limit: 20, window: 1s}
algorithms: [gcra]
`)
	run := func(runID, segment, offset, out string) (int, string) {
		cmd := exec.Command(bin, "run", "--redis", u.String(), "--no-reference", "--quiet", "--segment", segment, "--run-id", runID,
			"--lead", "1s", "--test-clock-offset", offset, "--out", out, scenario)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stderr.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stderr.String()
	}
	dirs := make([]string, 3)
	var wg sync.WaitGroup
	for i, off := range []string{"0s", "300ms", "-300ms"} {
		dirs[i] = filepath.Join(tmp, "s"+string(rune('0'+i)))
		wg.Go(func() {
			if code, stderr := run("procs", string(rune('0'+i))+"/3", off, dirs[i]); code != 0 {
				t.Errorf("segment %d: exit %d:\n%s", i, code, stderr)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	merge := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"merge"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stderr.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String()
	}
	out := filepath.Join(tmp, "merged")
	// gcra passes; on a machine too loaded to keep to the schedule the merged verdict is
	// inconclusive, exit 1, and the merged result is written all the same.
	junit, metrics := filepath.Join(tmp, "merged.xml"), filepath.Join(tmp, "merged-metrics.txt")
	if code, msg := merge(append([]string{"--out", out, "--junit", junit, "--metrics-report", metrics}, dirs...)...); code != 0 && code != exitFailed {
		t.Fatalf("merge: exit %d:\n%s", code, msg)
	} else if code != 0 {
		t.Logf("merge: exit %d: %s", code, msg)
	}
	merged, err := result.Read(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// The merged verdict as JUnit: gcra's one testcase, failed only if the merged run was not a
	// pass; and its figures as metrics.
	if got := junitCounts(t, junit); got[0] != 1 || (got[1]+got[2] == 0) != (merged.Entries[0].Label() == "pass") {
		t.Errorf("merge --junit: (tests, failures, errors, skipped) = %v for a merged %s; want gcra's verdict", got, merged.Entries[0].Label())
	}
	if b, err := os.ReadFile(metrics); err != nil || !strings.Contains(string(b), `limitbench_definite_violations{scenario="seg",algorithm="gcra",topology="cluster"} 0`) {
		t.Errorf("merge --metrics-report: %v\n%s", err, b)
	}
	var sum int64
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, result.FileName))
		if err != nil {
			t.Fatal(err)
		}
		var r result.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		sum += r.Entries[0].Requests
		if _, err := os.Stat(filepath.Join(d, r.Entries[0].Partial.Log)); err != nil {
			t.Errorf("%s: admission log: %v", d, err)
		}
	}
	if e := merged.Entries[0]; e.Requests != sum || e.Partial != nil || len(merged.Generators) != 3 {
		t.Errorf("merged: %d requests (segments %d), partial %v, %d generator rows; want the sum, no partial, 3 rows",
			e.Requests, sum, e.Partial != nil, len(merged.Generators))
	}
	// The merge streamed the segments' logs through the streaming checker; the whole-history
	// checker, given the same logs merged in memory, finds the same.
	{
		wantV, wantA := wholeHistoryOfSegments(t, dirs)
		gotV, gotA := merged.Entries[0].Verification, merged.Entries[0].Accuracy
		if gotV.DefiniteViolations != wantV.DefiniteViolations || gotV.PossibleViolations != wantV.PossibleViolations ||
			gotV.WorstExcess != wantV.WorstExcess || gotV.Where != wantV.Where || gotA != wantA {
			t.Errorf("merged: %d definite, %d possible, worst %d at %q, accuracy %+v; the whole-history checker on the segments' logs: %d, %d, %d at %q, %+v",
				gotV.DefiniteViolations, gotV.PossibleViolations, gotV.WorstExcess, gotV.Where, gotA,
				wantV.DefiniteViolations, wantV.PossibleViolations, wantV.WorstExcess, wantV.Where, wantA)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, report.MarkdownFile))
	if err != nil || !bytes.Contains(md, []byte("## Generators")) {
		t.Errorf("report.md has no Generators section (%v)", err)
	}
	if msg, err := exec.Command(bin, "report", filepath.Join(out, result.FileName)).CombinedOutput(); err != nil {
		t.Errorf("report of the merged result: %v\n%s", err, msg)
	}

	// The same segments as the previous version wrote them, the scenario also in words beside its
	// settings, merge into the same result.
	var previous []string
	for _, d := range dirs {
		previous = append(previous, withPreviousScenario(t, d))
	}
	outPrevious := filepath.Join(tmp, "merged-previous")
	if code, msg := merge(append([]string{"--out", outPrevious}, previous...)...); code != 0 && code != exitFailed {
		t.Fatalf("merge of the previous version's segments: exit %d:\n%s", code, msg)
	}
	if again, err := result.Read(filepath.Join(outPrevious, result.FileName)); err != nil {
		t.Error(err)
	} else if a, m := again.Entries[0], merged.Entries[0]; a.Requests != m.Requests || a.Allowed != m.Allowed ||
		a.Verification.Verdict != m.Verification.Verdict || again.Scenario.Settings == nil {
		t.Errorf("merged from the previous version's segments: %d requests, %d allowed, %s; want %d, %d, %s, with settings",
			a.Requests, a.Allowed, a.Verification.Verdict, m.Requests, m.Allowed, m.Verification.Verdict)
	}

	// The same merge in two shards (merge --shard I/2, each exit 0 whatever it found) joined
	// (merge --join) gives the merged verdict and figures.
	var shardDirs []string
	for i := range 2 {
		d := filepath.Join(tmp, fmt.Sprintf("shard-%d", i))
		if code, msg := merge(append([]string{"--shard", fmt.Sprintf("%d/2", i), "--out", d}, dirs...)...); code != 0 {
			t.Fatalf("merge --shard %d/2: exit %d:\n%s", i, code, msg)
		}
		shardDirs = append(shardDirs, d)
	}
	outJoined := filepath.Join(tmp, "joined")
	if code, msg := merge(append([]string{"--join", "--out", outJoined}, shardDirs...)...); code != 0 && code != exitFailed {
		t.Fatalf("merge --join: exit %d:\n%s", code, msg)
	}
	if j, err := result.Read(filepath.Join(outJoined, result.FileName)); err != nil {
		t.Error(err)
	} else if a, m := j.Entries[0], merged.Entries[0]; a.Requests != m.Requests || a.Verification.Verdict != m.Verification.Verdict ||
		a.Verification.DefiniteViolations != m.Verification.DefiniteViolations || a.Accuracy.IdealAllowed != m.Accuracy.IdealAllowed ||
		j.JoinedShards != 2 || j.Shard != nil {
		t.Errorf("joined: %d requests, %s, %d definite, ideal %d, %d shards; want the merge's %d, %s, %d, %d, 2 shards",
			a.Requests, a.Verification.Verdict, a.Verification.DefiniteViolations, a.Accuracy.IdealAllowed, j.JoinedShards,
			m.Requests, m.Verification.Verdict, m.Verification.DefiniteViolations, m.Accuracy.IdealAllowed)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append([]string{"--shard", "2/2"}, dirs...), "--shard: shard \"2/2\": want 0 <= I < K"},
		{append([]string{"--shard", "0/2", "--join"}, shardDirs...), "--shard and --join"},
		{append([]string{"--join"}, shardDirs[0]), "--join: the results are not the shards of one merge:\n  shard 1/2 is missing"},
		{append([]string{"--join"}, dirs...), "is not a shard's result (merge with --shard I/K)"},
	} {
		if code, msg := merge(append([]string{"--out", filepath.Join(tmp, "refused")}, tt.args...)...); code != 2 || !strings.Contains(msg, tt.want) {
			t.Errorf("merge %v: exit %d, %q; want exit 2 saying %q", tt.args, code, msg, tt.want)
		}
	}

	// Two of the three: a partial merge.
	outPartial := filepath.Join(tmp, "partial")
	if code, msg := merge("--out", outPartial, dirs[0], dirs[2]); code != exitFailed || !strings.Contains(msg, "merged without segment(s) 1/3") {
		t.Errorf("merge of segments 0 and 2 of 3: exit %d, %q; want exit 1 warning that segment 1/3 is missing", code, msg)
	}
	if p, err := result.Read(filepath.Join(outPartial, result.FileName)); err != nil {
		t.Error(err)
	} else {
		e, whole := p.Entries[0], merged.Entries[0]
		if !slices.Equal(p.MissingSegments, []string{"1/3"}) || len(p.Generators) != 2 || e.Requests >= whole.Requests ||
			e.Verification.Verdict != verify.Inconclusive || !strings.Contains(strings.Join(e.Verification.Reasons, "; "), "segment(s) 1/3 missing") {
			t.Errorf("partial merge: missing %v, %d generators, %d requests (whole %d), %s %q; want [1/3], 2, fewer, inconclusive naming 1/3",
				p.MissingSegments, len(p.Generators), e.Requests, whole.Requests, e.Verification.Verdict, e.Verification.Reasons)
		}
	}
	if md, err := os.ReadFile(filepath.Join(outPartial, report.MarkdownFile)); err != nil || !bytes.Contains(md, []byte("**Partial merge:** merged without segment(s) 1/3")) {
		t.Errorf("report.md of the partial merge does not say it is partial (%v)", err)
	}

	// Another run's segment 2, for mixing.
	other := filepath.Join(tmp, "other")
	if code, stderr := run("other", "2/3", "0s", other); code != 0 {
		t.Fatalf("other run: exit %d:\n%s", code, stderr)
	}
	// Segment 2 without its admission log.
	noLog := withPreviousScenario(t, dirs[2])
	logs, _ := filepath.Glob(filepath.Join(noLog, "*.alog*"))
	for _, l := range logs {
		if err := os.Remove(l); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"log missing", []string{dirs[0], dirs[1], noLog}, "gcra-cluster: admission log: stat " + noLog},
		{"duplicate", []string{dirs[0], dirs[1], dirs[1], dirs[2]}, "segment 1/3 is given twice: " + dirs[1] + " and " + dirs[1]},
		{"mixed", []string{dirs[0], dirs[1], other}, other + ` is of run "other", ` + dirs[0] + ` of run "procs"`},
	} {
		code, msg := merge(append([]string{"--out", filepath.Join(tmp, tt.name)}, tt.args...)...)
		if code != exitBadInput || !strings.Contains(msg, tt.want) {
			t.Errorf("merge %s: exit %d, %q; want exit 2 saying %q", tt.name, code, msg, tt.want)
		}
		if _, err := os.Stat(filepath.Join(tmp, tt.name)); err == nil {
			t.Errorf("merge %s: a refused merge left its --out directory behind", tt.name)
		}
	}
}

// withPreviousScenario copies the segment result in dir (result.json and its admission logs) to a
// new directory, its scenario section as the previous version wrote it: the scenario also in
// words (duration, clients, loop, mode, arrival, keys, skew, algorithms, expected violations)
// beside its settings. It returns the new directory.
func withPreviousScenario(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == result.FileName {
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			sc := doc["scenario"].(map[string]any)
			st := sc["settings"].(map[string]any)
			for k, v := range map[string]any{"duration_s": st["duration_s"], "clients": st["clients"], "loop": "open",
				"mode": st["client_mode"], "arrival": "constant 120/s", "keys": "3 subjects, uniform",
				"algorithms": st["algorithms"], "expect_violations": []string{}} {
				sc[k] = v
			}
			if b, err = json.MarshalIndent(doc, "", "  "); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// wholeHistoryOfSegments reads the admission logs of the segments' first entries in dirs, merges
// them into one history in memory, on the first segment's origin as a merge puts them, and
// returns what the whole-history checker (verify.Measurement.Sections) finds in it.
func wholeHistoryOfSegments(t *testing.T, dirs []string) (verify.Summary, verify.AccuracySummary) {
	t.Helper()
	var m verify.Measurement
	var base int64
	read := func(k int, dir, file string) *verify.Log {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := verify.NewLogReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			base = r.Head.Origin
		}
		l := &verify.Log{Base: base}
		for e, ok := r.Next(); ok; e, ok = r.Next() {
			if e, err = e.Shift(r.Head.Origin - base); err != nil {
				t.Fatal(err)
			}
			l.Events = append(l.Events, e)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return l
	}
	for k, d := range dirs {
		r, err := result.Read(filepath.Join(d, result.FileName))
		if err != nil {
			t.Fatal(err)
		}
		e, st := r.Entries[0], r.Scenario.Settings
		if k == 0 {
			a, err := algorithms.Lookup(e.Algorithm)
			if err != nil {
				t.Fatal(err)
			}
			if m.Contract, err = a.Contract(st.Limit); err != nil {
				t.Fatal(err)
			}
			m.Model, m.Start = a.Model(st.Limit), e.Partial.MeasuredFromUS
		}
		m.Start = min(m.Start, e.Partial.MeasuredFromUS)
		l := read(k, d, e.Partial.Log)
		if m.Log == nil {
			m.Log = l
			m.Log.Subjects = st.Keys.Names()
			for c := range st.Clients {
				m.Log.Clients = append(m.Log.Clients, fmt.Sprintf("c%d", c))
			}
		} else {
			m.Log.Events = append(m.Log.Events, l.Events...)
		}
		if e.Partial.WarmupLog != "" {
			w := read(k, d, e.Partial.WarmupLog)
			if m.Warmup == nil {
				m.Warmup = &verify.Log{Subjects: m.Log.Subjects, Clients: m.Log.Clients, Base: base}
			}
			m.Warmup.Events = append(m.Warmup.Events, w.Events...)
		}
	}
	return m.Sections()
}
