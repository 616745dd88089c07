//go:build linux || darwin

package bench_test

// A CPU competitor for the gate's tests and benchmarks: another process that keeps one CPU about
// half busy, as another CI job on the same machine would. It is this test binary run again with
// only TestCPUCompetitorProcess selected and competitorEnv set: that test spins and sleeps so that
// its CPU time stays at the duty cycle's share of the time elapsed, until its standard input
// closes (the parent stopped it or died); without the variable it skips.

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"
)

const (
	// competitorEnv holds the competitor's duty cycle in percent; set only in the child.
	competitorEnv = "LIMITBENCH_CPU_COMPETITOR"
	// competitorStep is how long the competitor spins or sleeps at a time: short, so that the load
	// looks steady to a measurement of a few hundred milliseconds.
	competitorStep = 2 * time.Millisecond
)

// TestCPUCompetitorProcess is the competitor's body when competitorEnv is set; otherwise it skips.
func TestCPUCompetitorProcess(t *testing.T) {
	duty, err := strconv.Atoi(os.Getenv(competitorEnv))
	if err != nil {
		t.Skip("the CPU competitor's child process body; runs only when started by startCompetitor")
	}
	runtime.GOMAXPROCS(1)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	// Spin or sleep in steps of competitorStep so that the CPU time used follows duty percent of
	// the time elapsed: on a contended machine a fixed busy-then-idle cycle would get less.
	start := time.Now()
	target := float64(duty) / 100
	x := 0.0
	for {
		select {
		case <-done:
			if x == 42 { // keep the loop's work observable
				t.Log(x)
			}
			return
		default:
		}
		if cpuTime() < time.Duration(target*float64(time.Since(start))) {
			step := time.Now()
			for time.Since(step) < competitorStep {
				for i := range 1000 {
					x += float64(i)
				}
			}
			continue
		}
		time.Sleep(competitorStep)
	}
}

// competitor is a running CPU competitor.
type competitor struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	start time.Time
}

// startCompetitor starts a process that keeps one CPU busy duty percent of the time, stopped by
// t's cleanup at the latest. It dies with the test process (Pdeathsig) too.
func startCompetitor(t testing.TB, duty int) *competitor {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCPUCompetitorProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), competitorEnv+"="+strconv.Itoa(duty))
	cmd.SysProcAttr = competitorSysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("CPU competitor: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start CPU competitor: %v", err)
	}
	c := &competitor{cmd: cmd, stdin: stdin, start: time.Now()}
	t.Cleanup(func() { c.stop() })
	return c
}

// stop ends the competitor and returns the CPUs it used on average (1 = one CPU all the time);
// later calls return 0.
func (c *competitor) stop() float64 {
	if c.stdin == nil {
		return 0
	}
	_ = c.stdin.Close()
	c.stdin = nil
	exited := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-exited
	}
	wall := time.Since(c.start)
	st := c.cmd.ProcessState
	if st == nil || wall <= 0 {
		return 0
	}
	return float64(st.UserTime()+st.SystemTime()) / float64(wall)
}
