package capacity

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/report"
)

// Limits above which a sweep's figure measures a busy machine rather than Redis (Noise.Busy).
// They are far from what a quiet machine shows and well under what a shared one shows: the
// 2-CPU development VM beside six other jobs had 60–90% of its CPU time used by other
// processes, and a probe p99 of 412 ms against 32 × 5 µs of Redis's time.
const (
	// StealLimit is the share of the machine's CPU time, percent, that the hypervisor gave to
	// other guests (steal) over the sweep.
	StealLimit = 5.0
	// OtherCPULimit is the share of the machine's CPU time, percent, that processes other than
	// this one and Redis used over the sweep: on 2 CPUs, half of one CPU.
	OtherCPULimit = 25.0
	// ProbeRatioLimit bounds the closed-loop probe's p99 round trip over clients × Redis's own
	// time per call (the longest a call waits for Redis when every other client's call is
	// ahead of it). On a quiet machine the round trip's fixed part (loopback, the client) puts
	// the ratio in the tens to a few hundred; past 1,000 the round trips waited for a CPU.
	ProbeRatioLimit = 1000.0
	// SpreadLimit bounds the ratio of the larger to the smaller p99 of two steps at the same
	// rate (a step and its confirm step): the same load measured twice should agree within it.
	SpreadLimit = 3.0
	// userHZ is the unit of /proc/stat and /proc/PID/stat times: USER_HZ ticks per second,
	// 100 on every Linux architecture Go supports.
	userHZ = 100
)

// Noise is how busy the machine was during the sweep (the probe and the open-loop steps), and
// whether that makes the sustainable rate a figure of the machine rather than of Redis.
//
// The CPU figures are deltas of /proc/stat's first line ("cpu", every CPU summed) between the
// start and the end of the sweep: StealPct = steal / total, and OtherCPUPct = (busy − this
// process's CPU − Redis's CPU) / total, where busy is user + nice + system + irq + softirq,
// total is busy + idle + iowait + steal, this process's CPU is from /proc/self/stat and Redis's
// is the sum over the steps of CPU µs per decision × requests (INFO's used_cpu). Redis's CPU
// is subtracted even when Redis runs on another machine: OtherCPUPct is then too low, never
// too high. Without /proc (not Linux) the CPU figures are not measured and CPUNote says so.
type Noise struct {
	// CPUMeasured says StealPct and OtherCPUPct were measured; CPUNote says why not.
	CPUMeasured bool    `json:"cpu_measured"`
	CPUNote     string  `json:"cpu_note,omitempty"`
	StealPct    float64 `json:"steal_pct"`
	OtherCPUPct float64 `json:"other_cpu_pct"`
	// ProbeP99US is the probe's p99 round trip, µs; ServiceUS Redis's own time per call in it,
	// µs; Clients the probe's clients. ProbeRatio = ProbeP99US / (Clients × ServiceUS); 0 when
	// any is unknown.
	ProbeP99US float64 `json:"probe_p99_us,omitempty"`
	ServiceUS  float64 `json:"service_us,omitempty"`
	Clients    int     `json:"clients,omitempty"`
	ProbeRatio float64 `json:"probe_ratio,omitempty"`
	// Spread is the largest ratio of the larger to the smaller p99 of two steps at the same
	// rate; 0 when no rate was measured twice.
	Spread float64 `json:"spread,omitempty"`
	// Busy says at least one figure is over its limit: the sustainable rate measures a busy
	// machine rather than Redis. Reasons says which, one sentence each.
	Busy    bool     `json:"busy"`
	Reasons []string `json:"reasons,omitempty"`
}

// CPUTimes is the CPU time of /proc/stat's first line ("cpu"), every CPU summed, in USER_HZ
// ticks. Guest time is part of User and Nice there, so it is not read.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Busy is the time the CPUs ran something of this machine: user, nice, system, irq and softirq.
func (t CPUTimes) Busy() uint64 { return t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ }

// Total is Busy plus idle, iowait and steal.
func (t CPUTimes) Total() uint64 { return t.Busy() + t.Idle + t.IOWait + t.Steal }

// Sub returns t − u field by field: the time between two readings u and t.
func (t CPUTimes) Sub(u CPUTimes) CPUTimes {
	return CPUTimes{User: t.User - u.User, Nice: t.Nice - u.Nice, System: t.System - u.System, Idle: t.Idle - u.Idle,
		IOWait: t.IOWait - u.IOWait, IRQ: t.IRQ - u.IRQ, SoftIRQ: t.SoftIRQ - u.SoftIRQ, Steal: t.Steal - u.Steal}
}

// ErrProcStat says a /proc/stat (or /proc/PID/stat) text is not as the kernel writes it.
var ErrProcStat = errors.New("malformed /proc stat")

// ReadCPUTimes reads the "cpu" line of a /proc/stat text. Kernels before 2.6.11 write fewer
// than eight fields: the missing ones are 0. It fails with ErrProcStat when the line is
// missing or a field is not a number.
func ReadCPUTimes(r io.Reader) (CPUTimes, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return CPUTimes{}, fmt.Errorf("%w: cpu line has %d fields, want at least 4 times", ErrProcStat, len(f)-1)
		}
		var v [8]uint64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("%w: cpu field %d: %q is not a tick count", ErrProcStat, i+1, f[i+1])
			}
			v[i] = n
		}
		return CPUTimes{User: v[0], Nice: v[1], System: v[2], Idle: v[3], IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]}, nil
	}
	if err := sc.Err(); err != nil {
		return CPUTimes{}, err
	}
	return CPUTimes{}, fmt.Errorf("%w: no cpu line", ErrProcStat)
}

// ReadProcessTicks reads a /proc/PID/stat text and returns the process's user + system time,
// USER_HZ ticks (its fields 14 and 15, counted after the command name in parentheses, which may
// hold spaces and parentheses itself).
func ReadProcessTicks(r io.Reader) (uint64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no command name in parentheses", ErrProcStat)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the command name, want at least 13", ErrProcStat, len(f))
	}
	var sum uint64
	for _, k := range []int{14, 15} {
		n, err := strconv.ParseUint(f[k-3], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: field %d: %q is not a tick count", ErrProcStat, k, f[k-3])
		}
		sum += n
	}
	return sum, nil
}

// cpuSample is one reading of the machine's and this process's CPU time.
type cpuSample struct {
	machine CPUTimes
	self    uint64
}

// procFiles are the files a cpuMeter reads; tests point them elsewhere.
type procFiles struct{ stat, self string }

var liveProc = procFiles{stat: "/proc/stat", self: "/proc/self/stat"}

// sample reads both files.
func (p procFiles) sample() (cpuSample, error) {
	var s cpuSample
	err := readFile(p.stat, func(r io.Reader) (err error) { s.machine, err = ReadCPUTimes(r); return err })
	if err == nil {
		err = readFile(p.self, func(r io.Reader) (err error) { s.self, err = ReadProcessTicks(r); return err })
	}
	return s, err
}

func readFile(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := read(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// cpuShares sets n's CPU figures from the samples before and after the sweep and Redis's CPU
// over it, µs. An interval with no ticks (too short to count) leaves them unmeasured.
func (n *Noise) cpuShares(before, after cpuSample, redisUS float64) {
	d := after.machine.Sub(before.machine)
	total := float64(d.Total())
	if total <= 0 {
		n.CPUNote = "the sweep was too short for /proc/stat to count"
		return
	}
	redis := redisUS / 1e6 * userHZ
	other := float64(d.Busy()) - float64(after.self-before.self) - redis
	n.CPUMeasured = true
	n.StealPct = round1(100 * float64(d.Steal) / total)
	n.OtherCPUPct = round1(100 * max(other, 0) / total)
}

// measureNoise returns the noise of c's sweep from the CPU samples around it (err: they could
// not be read) and c's probe and steps.
func measureNoise(c *Result, before, after cpuSample, err error) Noise {
	var n Noise
	if err != nil {
		n.CPUNote = "not measured: " + err.Error()
	} else {
		n.cpuShares(before, after, redisCPU(c))
	}
	if p := c.Probe; p != nil && c.Scenario.Settings != nil {
		n.ProbeP99US, n.ServiceUS, n.Clients = p.LatencyUS.P99, p.USecPerCall, c.Scenario.Settings.Clients
		if n.ServiceUS > 0 && n.Clients > 0 {
			n.ProbeRatio = math.Round(n.ProbeP99US / (float64(n.Clients) * n.ServiceUS))
		}
	}
	n.Spread = spread(c.Steps)
	n.judge()
	return n
}

// redisCPU is Redis's CPU over c's probe and steps, µs.
func redisCPU(c *Result) float64 {
	var us float64
	for _, s := range c.allSteps() {
		us += s.CPUUSecPerDecision * float64(s.Requests)
	}
	return us
}

// spread returns the largest ratio of the larger to the smaller p99 of two steps at the same
// offered rate; 0 when no rate was measured twice.
func spread(steps []Step) float64 {
	byRate := map[float64][]float64{}
	for _, s := range steps {
		if s.OfferedRPS > 0 && s.LatencyUS.P99 > 0 {
			byRate[s.OfferedRPS] = append(byRate[s.OfferedRPS], s.LatencyUS.P99)
		}
	}
	var worst float64
	for _, p99s := range byRate {
		if len(p99s) < 2 {
			continue
		}
		lo, hi := p99s[0], p99s[0]
		for _, v := range p99s[1:] {
			lo, hi = min(lo, v), max(hi, v)
		}
		worst = max(worst, hi/lo)
	}
	return round1(worst)
}

// judge sets Busy and Reasons from n's figures.
func (n *Noise) judge() {
	n.Reasons = nil
	if n.CPUMeasured && n.StealPct > StealLimit {
		n.Reasons = append(n.Reasons, fmt.Sprintf("the hypervisor took %.1f%% of the CPU time (steal; limit %g%%)", n.StealPct, StealLimit))
	}
	if n.CPUMeasured && n.OtherCPUPct > OtherCPULimit {
		n.Reasons = append(n.Reasons, fmt.Sprintf("other processes used %.1f%% of the CPU time (limit %g%%)", n.OtherCPUPct, OtherCPULimit))
	}
	if n.ProbeRatio > ProbeRatioLimit {
		n.Reasons = append(n.Reasons, fmt.Sprintf("the probe's p99 round trip %s was %.0f× its %d clients × Redis's %.2f µs per call (limit %g×)",
			report.Micros(n.ProbeP99US), n.ProbeRatio, n.Clients, n.ServiceUS, ProbeRatioLimit))
	}
	if n.Spread > SpreadLimit {
		n.Reasons = append(n.Reasons, fmt.Sprintf("two steps at the same rate differed %.1f× in p99 (limit %g×)", n.Spread, SpreadLimit))
	}
	n.Busy = len(n.Reasons) > 0
}

// Warning is the sentence a busy sweep's output leads with; empty when n is not Busy.
func (n Noise) Warning() string {
	if !n.Busy {
		return ""
	}
	return "this figure measures a busy machine rather than Redis: " + strings.Join(n.Reasons, "; ") +
		". Measure again with nothing else running"
}

// text is the noise row of the summary.
func (n Noise) text() string {
	var parts []string
	if n.CPUMeasured {
		parts = append(parts, fmt.Sprintf("steal %.1f%%, other processes %.1f%% of the CPU time", n.StealPct, n.OtherCPUPct))
	} else if n.CPUNote != "" {
		parts = append(parts, "CPU "+n.CPUNote)
	}
	if n.ProbeRatio > 0 {
		parts = append(parts, fmt.Sprintf("probe p99 %.0f× clients × service time", n.ProbeRatio))
	}
	if n.Spread > 0 {
		parts = append(parts, fmt.Sprintf("repeated steps' p99 %.1f× apart", n.Spread))
	}
	if len(parts) == 0 {
		return "not recorded"
	}
	verdict := "quiet"
	if n.Busy {
		verdict = "BUSY"
	}
	return verdict + ": " + strings.Join(parts, "; ")
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// runNoting runs the sweep (sw.run) between two readings of files and sets the result's Noise
// from them and the steps; a busy machine is said through Logf.
func (sw *sweep) runNoting(ctx context.Context, files procFiles) error {
	before, errBefore := files.sample()
	err := sw.run(ctx)
	after, errAfter := files.sample()
	sw.c.Noise = measureNoise(sw.c, before, after, errors.Join(errBefore, errAfter))
	if w := sw.c.Noise.Warning(); w != "" {
		sw.o.Logf("warning: %s", w)
	}
	return err
}
