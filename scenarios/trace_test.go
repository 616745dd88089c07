package scenarios

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
)

// writeScenario writes a scenario and a trace beside it in a fresh directory and returns the
// scenario's path.
func writeScenario(t *testing.T, yaml, traceName, trace string) string {
	t.Helper()
	dir := t.TempDir()
	if traceName != "" {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, traceName)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, traceName), []byte(trace), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodTrace = "offset,client,subject,cost\n0s,a,u1,1\n250ms,b,u2,2\n1500ms,a,u1,1\n"

func TestTraceArrival(t *testing.T) {
	path := writeScenario(t, "arrival: {trace: traces/t.csv, align: 1s}\nalgorithms: [gcra]\nclients: 2\n", "traces/t.csv", goodTrace)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Arrival.Kind() != arrival.Traced || len(s.Arrival.Trace.Rows) != 3 || s.Arrival.TraceFile != "traces/t.csv" {
		t.Fatalf("arrival %+v; want the trace of 3 rows from traces/t.csv", s.Arrival)
	}
	if want := 1500*time.Millisecond + time.Millisecond; s.Duration != want {
		t.Errorf("duration %s; want %s (just after the last row)", s.Duration, want)
	}
	p := s.Plan()
	tp, ok := p.Arrival.(*load.TracePacer)
	if !ok || tp.Trace() != s.Arrival.Trace {
		t.Fatalf("plan's arrival %T; want the trace's pacer", p.Arrival)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("plan of a trace scenario: %v", err)
	}
	if got := s.Arrival.String(); !strings.Contains(got, "trace traces/t.csv (3 requests over 1.5s)") {
		t.Errorf("String() = %q", got)
	}
	js, err := json.Marshal(s.Arrival)
	if err != nil || !strings.Contains(string(js), `"kind":"trace","trace":{"file":"traces/t.csv","rows":3,"clients":2,"subjects":2,"span_s":1.5}`) {
		t.Errorf("result.json's arrival: %s, %v", js, err)
	}
	var back arrival.Arrival
	if err := json.Unmarshal(js, &back); err != nil || back.Kind() != arrival.Traced || back.String() != "trace traces/t.csv (3 requests over 1.5s), aligned to 1s+0s" {
		t.Errorf("read back: %q (kind %s), %v", back.String(), back.Kind(), err)
	}
}

func TestTraceArrivalErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, trace string
		want              []string
	}{
		{"bad row", "arrival: {trace: t.csv}\n", "offset,client,subject,cost\n0s,a,u1,1\n1s,a,u1,0\n",
			[]string{"t.csv:3: arrival.trace cost: column 9: 0 is outside [1, 65535]"}},
		{"missing file", "arrival: {trace: nope.csv}\n", "",
			[]string{"s.yaml:1: arrival.trace: ", "nope.csv"}},
		{"bad extension", "arrival: {trace: t.txt}\n", "x",
			[]string{"arrival.trace: ", ".csv or .jsonl"}},
		{"with keys cost skew seed", "arrival: {trace: t.csv}\nkeys: {count: 3}\ncost: 2\nclock_skew: [1s]\nseed: 4\n", goodTrace,
			[]string{"s.yaml:2: keys: cannot be combined with arrival.trace", "s.yaml:3: cost: cannot", "s.yaml:4: clock_skew: cannot", "s.yaml:5: seed: cannot"}},
		{"too short", "arrival: {trace: t.csv}\nduration: 1s\n", goodTrace,
			[]string{"s.yaml:2: duration: the trace's last request is at 1.5s"}},
		{"with a rate", "arrival: {trace: t.csv, rate: 5}\n", goodTrace,
			[]string{"arrival: give only one of rate, ramp, steps, spike or trace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "t.csv"
			if strings.Contains(tc.yaml, "t.txt") {
				name = "t.txt"
			}
			if tc.trace == "" {
				name = ""
			}
			_, err := Load(writeScenario(t, tc.yaml, name, tc.trace))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load: %v; want ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "arrival.rate") {
				t.Errorf("error:\n%v\nwant no problem of a rate the scenario does not give", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
