package result

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/golden"
)

// TestReadPreviousVersion: a result.json written by the previous version, whose scenario section
// described the scenario twice, in words beside its settings (testdata/v1-words-result.json: the
// bytes testdata/full-result.json had then), reads as the same result, and is written again as
// this version writes it: the words are dropped, nothing else changes. The sections added since
// (an entry's fairness and excerpt, its timeline's use, its verification's finding and pressure;
// the scenario's speed_only; the harness's commit and date; the run's sequential rounds; a
// segment's servers; a partial merge's missing segments; an entry's strict_keys and
// in_progress; a sharded merge's shard and joined shards) are absent
// there and read as empty.
func TestReadPreviousVersion(t *testing.T) {
	old, err := Read(filepath.Join("testdata", "v1-words-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Read(fullResultGolden)
	if err != nil {
		t.Fatal(err)
	}
	if old.Environment.HarnessCommit != "" || old.Environment.HarnessDate != "" {
		t.Fatalf("the previous version's file holds a harness commit or date: %+v", old.Environment)
	}
	old.Environment.HarnessCommit, old.Environment.HarnessDate = cur.Environment.HarnessCommit, cur.Environment.HarnessDate
	cur.Scenario.Settings.SpeedOnly = nil
	cur.Sequential, cur.MissingSegments, cur.Shard, cur.JoinedShards = nil, nil, nil, 0
	cur.Segment.Servers = nil
	for i := range cur.Entries {
		e := &cur.Entries[i]
		e.Fairness, e.Excerpt, e.Timeline.Use = nil, nil, nil
		e.Verification.Finding, e.Verification.Pressure = "", nil
		e.StrictKeys, e.InProgress, e.Shard = false, false, ""
	}
	if diff := cmp.Diff(cur, old); diff != "" {
		t.Errorf("the previous version's result.json reads differently (-this version +previous):\n%s", diff)
	}
	dir := t.TempDir()
	if err := old.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	wantDir := t.TempDir()
	if err := cur.Write(wantDir); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(wantDir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the previous version's result.json written again differs from %s without the new sections:\n%s", fullResultGolden, golden.FirstDiff(want, got))
	}
}
