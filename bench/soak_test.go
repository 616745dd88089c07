//go:build linux

package bench_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limitbench/limitbench/result"
)

// The soak benchmark's settings (make bench-soak passes them after -args).
var (
	soak       = flag.Bool("soak", false, "run BenchmarkSoak (make bench-soak): about 20 minutes")
	soakRounds = flag.Int("soak-rounds", 2, "BenchmarkSoak: paired rounds")
	soakShort  = flag.Duration("soak-short", 30*time.Second, "BenchmarkSoak: the short saturation run")
	soakLong   = flag.Duration("soak-long", 300*time.Second, "BenchmarkSoak: the long saturation run")
	soakMerge  = flag.Duration("soak-merge", 120*time.Second, "BenchmarkSoak: the 3-segment run whose merge is measured")
)

// soakFigures are one limitbench process's: its peak RSS and, for a run, gcra's admissions per
// second of measured time.
type soakFigures struct {
	rssMB, admitted float64
}

// BenchmarkSoak (make bench-soak, issue 30): the peak RSS of saturation runs (scenarios/
// saturation.yaml, gcra, --no-reference) of -soak-short and -soak-long, verifying as they run,
// with their admissions per second; the same short run with --whole-history in the same round
// (paired: the throughput ratio of verifying as it runs to verifying after the load); and the
// peak RSS of `limitbench merge` of a 3-segment run of -soak-merge on one Redis this benchmark
// starts. It reports the medians over -soak-rounds rounds with their ranges, and each of issue
// 30's targets as met or not. Peak RSS is the process's (wait4's ru_maxrss).
func BenchmarkSoak(b *testing.B) {
	if !*soak {
		b.Skip("-soak not given (make bench-soak)")
	}
	bin := buildLimitbench(b)
	scenario, err := filepath.Abs(filepath.Join("..", "scenarios", "saturation.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	segs := soakSegments(b, bin, scenario, dir)
	var short, whole, long, merge []soakFigures
	for b.Loop() {
		for r := range *soakRounds {
			out := filepath.Join(dir, "round"+strconv.Itoa(r))
			short = append(short, soakRun(b, bin, scenario, filepath.Join(out, "short"), *soakShort))
			whole = append(whole, soakRun(b, bin, scenario, filepath.Join(out, "whole"), *soakShort, "--whole-history"))
			long = append(long, soakRun(b, bin, scenario, filepath.Join(out, "long"), *soakLong))
			merge = append(merge, soakProcess(b, bin, 30*time.Minute, append([]string{"merge", "--out", filepath.Join(out, "merged")}, segs...)...))
			b.Logf("round %d: short %.0f MB %.0f adm/s; whole-history %.0f MB %.0f adm/s; long %.0f MB %.0f adm/s; merge %.0f MB", r,
				short[r].rssMB, short[r].admitted, whole[r].rssMB, whole[r].admitted, long[r].rssMB, long[r].admitted, merge[r].rssMB)
		}
	}
	rss := func(f soakFigures) float64 { return f.rssMB }
	adm := func(f soakFigures) float64 { return f.admitted }
	ratio := func(a, c []soakFigures, f func(soakFigures) float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = f(a[i]) / f(c[i])
		}
		return out
	}
	report := func(name string, v []float64, unit string) float64 {
		m := soakMedian(v)
		b.Logf("%-44s median %10.3f %s, range %.3f–%.3f (%d rounds)", name, m, unit, slices.Min(v), slices.Max(v), len(v))
		b.ReportMetric(m, strings.ReplaceAll(name, " ", "-"))
		return m
	}
	sRSS := report("peak RSS short", each(short, rss), "MB")
	lRSS := report("peak RSS long", each(long, rss), "MB")
	report("peak RSS short whole-history", each(whole, rss), "MB")
	report("admissions/s short", each(short, adm), "/s")
	report("admissions/s long", each(long, adm), "/s")
	tp := report("throughput streaming/whole-history", ratio(short, whole, adm), "x")
	rr := report("peak RSS long/short", ratio(long, short, rss), "x")
	mRSS := report("peak RSS merge", each(merge, rss), "MB")
	target := func(ok bool, what string) {
		verdict := "MET"
		if !ok {
			verdict = "NOT MET"
		}
		b.Logf("target %-7s %s", verdict, what)
	}
	target(rr <= 1.10, fmt.Sprintf("peak RSS of %s within 10%% of %s's: %.0f MB vs %.0f MB (%.2fx)", *soakLong, *soakShort, lRSS, sRSS, rr))
	target(max(sRSS, lRSS) <= 256, fmt.Sprintf("peak RSS at most 256 MB: %.0f MB", max(sRSS, lRSS)))
	target(tp >= 0.95, fmt.Sprintf("throughput verifying as it runs at least 0.95 of the whole-history verifier's: %.3f", tp))
	target(mRSS <= 256, fmt.Sprintf("merge of a 3-segment %s run in at most 256 MB: %.0f MB", *soakMerge, mRSS))
}

// each returns f of every figure.
func each(fs []soakFigures, f func(soakFigures) float64) []float64 {
	out := make([]float64, len(fs))
	for i := range fs {
		out[i] = f(fs[i])
	}
	return out
}

// soakMedian returns the median of v (the mean of the middle two for an even count).
func soakMedian(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// soakRun runs gcra on the saturation scenario for d (a process backend Redis of its own) and
// returns its peak RSS and admissions per second.
func soakRun(b *testing.B, bin, scenario, out string, d time.Duration, extra ...string) soakFigures {
	b.Helper()
	args := append([]string{"run", "--backend", "process", "--quiet", "--algorithms", "gcra", "--no-reference",
		"--duration", d.String(), "--out", out}, extra...)
	f := soakProcess(b, bin, d+10*time.Minute, append(args, scenario)...)
	r, err := result.Read(filepath.Join(out, result.FileName))
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range r.Entries {
		if e.Algorithm == "gcra" && e.DurationS > 0 {
			f.admitted = float64(e.Allowed) / e.DurationS
		}
	}
	return f
}

// soakProcess runs bin with args (killed after timeout), fails b unless it exits 0 or 1 (a
// verdict), and returns its peak RSS.
func soakProcess(b *testing.B, bin string, timeout time.Duration, args ...string) soakFigures {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	outb, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 {
		b.Fatalf("limitbench %s: %v\n%s", strings.Join(args, " "), err, outb)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatal("no rusage")
	}
	return soakFigures{rssMB: float64(ru.Maxrss) / 1024} // ru_maxrss is in KiB on Linux
}

// soakSegments runs the 3 segments of a -soak-merge saturation run of gcra on one redis-server
// started here (on a free loopback port, stopped before it returns) and returns their
// directories.
func soakSegments(b *testing.B, bin, scenario, dir string) []string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	srv := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := srv.Start(); err != nil {
		b.Skipf("redis-server: %v", err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	var dirs []string
	errs := make(chan error, 3)
	for i := range 3 {
		out := filepath.Join(dir, "segment-"+strconv.Itoa(i))
		dirs = append(dirs, out)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), *soakMerge+10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--redis", "redis://127.0.0.1:"+port, "--segment", fmt.Sprintf("%d/3", i),
				"--run-id", "soak", "--lead", "5s", "--quiet", "--algorithms", "gcra", "--no-reference",
				"--duration", soakMerge.String(), "--out", out, scenario)
			outb, err := cmd.CombinedOutput()
			if err != nil && cmd.ProcessState.ExitCode() != 1 {
				err = fmt.Errorf("segment %d: %w\n%s", i, err, outb)
			} else {
				err = nil
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dirs[0], result.FileName)); err != nil {
		b.Fatal(err)
	}
	return dirs
}
