package result

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/limitbench/limitbench/internal/load"
)

// Segment says that a result is one generator's part of a segmented run (limitbench run
// --segment I/N): what `limitbench merge` needs to check that partial results belong together.
type Segment struct {
	// RunID is shared by the run's segments; their keys live under limitbench:<RunID>:.
	RunID string `json:"run_id"`
	// Index is this segment's number, 0 to Count−1; Count the number of segments.
	Index int `json:"segment"`
	Count int `json:"segments"`
	// ScenarioHash is ScenarioHash of the scenario the segment ran (after overrides).
	ScenarioHash string `json:"scenario_hash"`
	// Start says how the segments met: "barrier" (a key in the Redis under test) or "start-at".
	Start string `json:"start"`
	// TestClockOffsetUS is the artificial offset added to this generator's clock (testing only);
	// zero in real runs.
	TestClockOffsetUS int64 `json:"test_clock_offset_us,omitempty"`
	// Servers identifies the Redis the segment measured: each master as the generator reached
	// it, with its run_id (INFO server), when the environment started. Segments of one run share
	// one Redis, so their run ids agree (addresses may differ between generators); empty in a
	// result written before it was recorded.
	Servers []SegmentServer `json:"servers,omitempty"`
}

// SegmentServer is one master of the Redis a segment measured.
type SegmentServer struct {
	Addr  string `json:"addr"`
	RunID string `json:"run_id"`
}

// Partial is what one segment's entry holds for merging: the measurement's aggregators,
// encoded (base64 of their binary encodings), the load's counts, and where its admission logs
// are. Merged entries have none.
type Partial struct {
	// Counts are the measured part's counts (load.Counts) and Scheduled its scheduled ticks.
	Counts    load.Counts `json:"counts"`
	Scheduled uint64      `json:"scheduled"`
	// DurationNS is the measured part's length; WarmupNS and BinNS the plan's.
	DurationNS int64 `json:"duration_ns"`
	WarmupNS   int64 `json:"warmup_ns"`
	BinNS      int64 `json:"bin_ns"`
	// Canceled and Behind are load.Result's.
	Canceled bool `json:"canceled,omitempty"`
	Behind   bool `json:"behind,omitempty"`
	// Histograms, Timeline and Errors are the encodings of load's aggregators.
	Histograms []byte `json:"histograms"`
	Timeline   []byte `json:"timeline"`
	Errors     []byte `json:"errors"`
	// Log and WarmupLog name the admission log files beside result.json (verify.LogReader
	// reads them: the sorted, compressed file, or in results written before it the older
	// encoding, AdmissionLog's); WarmupLog is empty without a warmup. LogData and WarmupLogData hold their
	// bytes in memory until WritePartialLogs writes them.
	Log           string `json:"log"`
	WarmupLog     string `json:"warmup_log,omitempty"`
	LogData       []byte `json:"-"`
	WarmupLogData []byte `json:"-"`
	// MeasuredFromUS is where the measured part started, on the server's clock, µs since the
	// Unix epoch.
	MeasuredFromUS int64 `json:"measured_from_us"`
	// ClockOffsetUS is the server's clock minus this generator's, ± ClockErrorUS.
	ClockOffsetUS float64 `json:"clock_offset_us"`
	ClockErrorUS  float64 `json:"clock_error_us"`
	// LateStartMS is how late this generator arrived after the agreed start (0: on time).
	LateStartMS float64 `json:"late_start_ms,omitempty"`
	// Arrived is how many generators had arrived at the barrier when this one finished (0
	// with --start-at, where they do not meet).
	Arrived int64 `json:"arrived,omitempty"`
}

// Shard says that a merged result is one shard of a sharded merge (limitbench merge --shard
// I/K): each entry's verification, accuracy and timeline limit cover only the scopes whose
// name's hash falls in shard Index of Count (Entry.Shard says which scopes), and limitbench
// merge --join joins the Count shards into the merged result.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Hash names the hash of the scope names, taken modulo Count: "fnv1a-64" (FNV-1a, 64
	// bits, of the subject's or client's name as the result's settings name them: key names
	// such as "k42", clients "c7").
	Hash string `json:"hash"`
}

// The values of Entry.Shard.
const (
	// ShardBySubject: the shard verified the subjects whose name's hash falls in it.
	ShardBySubject = "subject"
	// ShardByClient: the shard verified the clients whose name's hash falls in it (a contract
	// counted per client across subjects).
	ShardByClient = "client"
	// ShardWhole: a contract counted both per subject and per client across subjects cannot be
	// split either way: shard 0 verified the entry whole, the other shards not at all.
	ShardWhole = "whole"
)

// Generator is one row of a merged result's per-generator table.
type Generator struct {
	Segment       int     `json:"segment"`
	Requests      int64   `json:"requests"`
	ThroughputRPS float64 `json:"throughput_rps"`
	Late          int64   `json:"late"`
	LateFraction  float64 `json:"late_fraction"`
	LateStartMS   float64 `json:"late_start_ms"`
	ClockOffsetUS float64 `json:"clock_offset_us"`
	ClockErrorUS  float64 `json:"clock_error_us"`
}

// ScenarioHash returns a hash of s as run (its file's path left out): segments of one run ran
// the same scenario, seed and overrides exactly when their hashes are equal.
func ScenarioHash(s Scenario) string {
	s.File = ""
	b, err := json.Marshal(s)
	if err != nil {
		// A Scenario always marshals; a failure would be a bug, and then no two hashes match.
		b = []byte(time.Now().String())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// LogFile returns the name of the admission log file of entry e (warmup: its warmup's):
// <algorithm>-<topology>.alog.gz, a sorted log file (verify.LogReader). Results written before
// it name <algorithm>-<topology>.alog files in the older, uncompressed encoding; Partial.Log
// names the file either way.
func LogFile(e *Entry, warmup bool) string {
	if warmup {
		return e.Name() + "-warmup.alog.gz"
	}
	return e.Name() + ".alog.gz"
}

// WritePartialLogs writes the admission logs of r's partial entries into dir, under the names
// their Partial gives.
func WritePartialLogs(dir string, r *Result) error {
	for i := range r.Entries {
		p := r.Entries[i].Partial
		if p == nil {
			continue
		}
		if err := WriteFile(filepath.Join(dir, p.Log), p.LogData); err != nil {
			return err
		}
		if p.WarmupLog != "" {
			if err := WriteFile(filepath.Join(dir, p.WarmupLog), p.WarmupLogData); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadPartialLogs reads into each partial entry of r, a result read from dir, the admission logs
// its Partial names.
func ReadPartialLogs(dir string, r *Result) error {
	for i := range r.Entries {
		if err := ReadPartialLog(dir, &r.Entries[i]); err != nil {
			return err
		}
	}
	return nil
}

// ReadPartialLog reads into e's Partial, of a result read from dir, the admission logs it names
// (LogData, WarmupLogData); nothing for an entry without a Partial.
func ReadPartialLog(dir string, e *Entry) error {
	p := e.Partial
	if p == nil {
		return nil
	}
	var err error
	if p.LogData, err = os.ReadFile(filepath.Join(dir, filepath.Base(p.Log))); err != nil {
		return fmt.Errorf("%s: admission log: %w", e.Name(), err)
	}
	if p.WarmupLog != "" {
		if p.WarmupLogData, err = os.ReadFile(filepath.Join(dir, filepath.Base(p.WarmupLog))); err != nil {
			return fmt.Errorf("%s: warmup admission log: %w", e.Name(), err)
		}
	}
	return nil
}

// CheckPartialLogs checks that the admission logs each partial entry of r, a result read from dir,
// names are there to be read (ReadPartialLog), without reading them.
func CheckPartialLogs(dir string, r *Result) error {
	for i := range r.Entries {
		p := r.Entries[i].Partial
		if p == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(p.Log))); err != nil {
			return fmt.Errorf("%s: admission log: %w", r.Entries[i].Name(), err)
		}
		if p.WarmupLog != "" {
			if _, err := os.Stat(filepath.Join(dir, filepath.Base(p.WarmupLog))); err != nil {
				return fmt.Errorf("%s: warmup admission log: %w", r.Entries[i].Name(), err)
			}
		}
	}
	return nil
}
