package capacity

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
)

// procStat is a /proc/stat text whose first line holds the given fields after "cpu".
func procStat(fields string) string {
	return "cpu  " + fields + "\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 12345 0 0\nctxt 999\nbtime 1700000000\n"
}

func TestReadCPUTimes(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       CPUTimes
		err        string
	}{
		{"linux 5", procStat("1837443 4790 667960 219076 2710 0 21681 350 0 0"),
			CPUTimes{User: 1837443, Nice: 4790, System: 667960, Idle: 219076, IOWait: 2710, SoftIRQ: 21681, Steal: 350}, ""},
		{"before steal", procStat("10 20 30 40"), CPUTimes{User: 10, Nice: 20, System: 30, Idle: 40}, ""},
		{"too few", procStat("10 20 30"), CPUTimes{}, "cpu line has 3 fields"},
		{"not a number", procStat("10 20 x 40 0 0 0 0"), CPUTimes{}, `cpu field 3: "x"`},
		{"negative", procStat("10 -20 30 40"), CPUTimes{}, `cpu field 2: "-20"`},
		{"no cpu line", "cpu0 1 2 3 4\nintr 1\n", CPUTimes{}, "no cpu line"},
		{"empty", "", CPUTimes{}, "no cpu line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCPUTimes(strings.NewReader(tt.text))
			if tt.err != "" {
				if !errors.Is(err, ErrProcStat) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ReadCPUTimes = %+v, %v; want ErrProcStat saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ReadCPUTimes (-want +got):\n%s", d)
			}
		})
	}
}

func TestCPUTimesSums(t *testing.T) {
	a := CPUTimes{User: 100, Nice: 1, System: 50, Idle: 800, IOWait: 9, IRQ: 2, SoftIRQ: 3, Steal: 35}
	if a.Busy() != 156 || a.Total() != 1000 {
		t.Errorf("Busy %d, Total %d; want 156, 1000", a.Busy(), a.Total())
	}
	b := CPUTimes{User: 160, Nice: 1, System: 70, Idle: 900, IOWait: 9, IRQ: 2, SoftIRQ: 3, Steal: 55}
	if d := cmp.Diff(CPUTimes{User: 60, System: 20, Idle: 100, Steal: 20}, b.Sub(a)); d != "" {
		t.Errorf("Sub (-want +got):\n%s", d)
	}
}

func TestReadProcessTicks(t *testing.T) {
	const tail = " S 1 2 3 0 -1 4194560 500 0 0 0 %s %s 0 0 20 0 9 0 100 1000000 200 18446744073709551615\n"
	for _, tt := range []struct {
		name, text string
		want       uint64
		err        string
	}{
		{"plain", "4242 (limitbench)" + strings.ReplaceAll(strings.Replace(tail, "%s", "1500", 1), "%s", "230"), 1730, ""},
		{"name with spaces and parentheses", "4242 (a (b) c)" + strings.ReplaceAll(strings.Replace(tail, "%s", "7", 1), "%s", "3"), 10, ""},
		{"no name", "4242 limitbench S 1", 0, "no command name"},
		{"short", "4242 (x) S 1 2 3", 0, "4 fields after"},
		{"bad utime", "4242 (x)" + strings.ReplaceAll(strings.Replace(tail, "%s", "u", 1), "%s", "3"), 0, `field 14: "u"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadProcessTicks(strings.NewReader(tt.text))
			if tt.err != "" {
				if !errors.Is(err, ErrProcStat) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ReadProcessTicks = %d, %v; want ErrProcStat saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ReadProcessTicks = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// noisyResult is a sweep of 32 clients whose probe and steps are given.
func noisyResult(probe Step, steps ...Step) *Result {
	return &Result{Scenario: result.Scenario{Settings: &result.Settings{Clients: 32}}, Probe: &probe, Steps: steps}
}

func TestMeasureNoise(t *testing.T) {
	lat := func(p99 float64) load.Latency { return load.Latency{P50: p99 / 4, P99: p99} }
	// Redis's CPU: 10 µs × 100,000 decisions = 1 s = 100 ticks.
	quietProbe := Step{Phase: PhaseProbe, LatencyUS: lat(3200), USecPerCall: 5, CPUUSecPerDecision: 10, Requests: 100_000}
	before := cpuSample{machine: CPUTimes{User: 1000, System: 500, Idle: 5000}, self: 300}
	// 1,000 ticks pass: 350 busy (of which 150 this process, 100 Redis: 100 others), 10 steal.
	quietAfter := cpuSample{machine: CPUTimes{User: 1250, System: 600, Idle: 5640, Steal: 10}, self: 450}
	for _, tt := range []struct {
		name    string
		c       *Result
		after   cpuSample
		err     error
		want    Noise
		reasons []string // substrings, one per reason
	}{
		{"quiet", noisyResult(quietProbe), quietAfter, nil,
			Noise{CPUMeasured: true, StealPct: 1, OtherCPUPct: 10, ProbeP99US: 3200, ServiceUS: 5, Clients: 32, ProbeRatio: 20}, nil},
		{"steal", noisyResult(quietProbe), cpuSample{machine: CPUTimes{User: 1250, System: 600, Idle: 5590, Steal: 60}, self: 450}, nil,
			Noise{CPUMeasured: true, StealPct: 6, OtherCPUPct: 10, ProbeP99US: 3200, ServiceUS: 5, Clients: 32, ProbeRatio: 20, Busy: true},
			[]string{"hypervisor took 6.0%"}},
		{"other processes", noisyResult(quietProbe), cpuSample{machine: CPUTimes{User: 1550, System: 600, Idle: 5340, Steal: 10}, self: 450}, nil,
			Noise{CPUMeasured: true, StealPct: 1, OtherCPUPct: 40, ProbeP99US: 3200, ServiceUS: 5, Clients: 32, ProbeRatio: 20, Busy: true},
			[]string{"other processes used 40.0%"}},
		{"probe stalled, steps apart, no /proc",
			noisyResult(Step{Phase: PhaseProbe, LatencyUS: lat(412_000), USecPerCall: 5},
				Step{Phase: PhaseDouble, OfferedRPS: 400, LatencyUS: lat(900)},
				Step{Phase: PhaseDouble, OfferedRPS: 800, LatencyUS: lat(9000), Superseded: true},
				Step{Phase: PhaseConfirm, OfferedRPS: 800, LatencyUS: lat(1500)}),
			cpuSample{}, os.ErrNotExist,
			Noise{CPUNote: "not measured: file does not exist", ProbeP99US: 412_000, ServiceUS: 5, Clients: 32, ProbeRatio: 2575, Spread: 6, Busy: true},
			[]string{"412ms was 2575× its 32 clients × Redis's 5.00 µs", "differed 6.0× in p99"}},
		{"no time passed", noisyResult(Step{Phase: PhaseProbe}), before, nil,
			Noise{CPUNote: "the sweep was too short for /proc/stat to count", Clients: 32}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := measureNoise(tt.c, before, tt.after, tt.err)
			reasons := got.Reasons
			got.Reasons = nil
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("measureNoise (-want +got):\n%s", d)
			}
			if len(reasons) != len(tt.reasons) {
				t.Fatalf("reasons %q; want %d", reasons, len(tt.reasons))
			}
			for i, r := range tt.reasons {
				if !strings.Contains(reasons[i], r) {
					t.Errorf("reason %d %q; want it to say %q", i, reasons[i], r)
				}
			}
			got.Reasons = reasons
			if w := got.Warning(); got.Busy != strings.HasPrefix(w, "this figure measures a busy machine rather than Redis: ") {
				t.Errorf("busy %v, warning %q", got.Busy, w)
			}
		})
	}
}

// TestRunNotingReadsFiles: the sweep reads the machine's CPU time from the files it is given,
// before and after the steps (here written by the fake measurement, as a busy machine would
// advance them), and says a busy machine through Logf; files that are not there leave the CPU
// figures unmeasured and say why.
func TestRunNotingReadsFiles(t *testing.T) {
	dir := t.TempDir()
	files := procFiles{stat: filepath.Join(dir, "stat"), self: filepath.Join(dir, "self")}
	write := func(stat, self string) {
		t.Helper()
		if err := os.WriteFile(files.stat, []byte(procStat(stat)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(files.self, []byte("1 (limitbench) S 1 2 3 0 -1 0 0 0 0 0 "+self+" 0 0 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("1000 0 500 5000 0 0 0 0", "100 50")
	var logged []string
	c := &Result{}
	sw := &sweep{o: Options{MaxSteps: 4, Logf: func(f string, a ...any) { logged = append(logged, f) }}, c: c}
	sw.measure = func(_ context.Context, phase string, rate float64) (Step, *result.Entry, error) {
		// 1,000 ticks: 600 busy, 100 of them this process's: 50% other processes.
		write("1500 0 600 5400 0 0 0 0", "150 100")
		return Step{Phase: phase, OfferedRPS: rate, Good: true, AchievedRPS: rate}, &result.Entry{}, nil
	}
	if err := sw.runNoting(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	if n := c.Noise; !n.CPUMeasured || n.OtherCPUPct != 50 || !n.Busy {
		t.Errorf("noise %+v; want 50%% other processes, busy", n)
	}
	if !strings.Contains(strings.Join(logged, "\n"), "warning: %s") {
		t.Errorf("logged %q; want the busy machine's warning", logged)
	}

	c2 := &Result{}
	sw2 := &sweep{o: Options{MaxSteps: 2, Logf: t.Logf}, c: c2, measure: sw.measure}
	if err := sw2.runNoting(context.Background(), procFiles{stat: filepath.Join(dir, "none"), self: files.self}); err != nil {
		t.Fatal(err)
	}
	if n := c2.Noise; n.CPUMeasured || !strings.Contains(n.CPUNote, "not measured") || !strings.Contains(n.text(), "CPU not measured") {
		t.Errorf("noise %+v (%q); want the CPU figures not measured, and why", n, n.text())
	}
}
