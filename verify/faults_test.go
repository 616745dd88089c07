package verify

import (
	"strings"
	"testing"
)

// Issue 19: JudgeFaults on the restart history of TestJudgeEpochsRestart (a correct limiter, its
// state lost at 1195–1212 µs, window 100 µs, violations across the loss) with an injected fault
// over the loss: the fault the scenario asked for is not a reason for doubt, its excess is
// reported; a fault elsewhere, a violation within an epoch or an unknown outcome outside every
// window keep the verdicts JudgeEpochs gives.
func TestJudgeFaults(t *testing.T) {
	restart := func(lo, hi, until int64) InjectedFault {
		return InjectedFault{Name: "restart master at 0.2ms", Kind: "restart", Target: "master", Lo: lo, Hi: hi, Until: until}
	}
	tests := []struct {
		name    string
		fs      []InjectedFault
		extra   []Event // added to the history
		verdict Verdict
		reason  string // in the reasons
		excess  int64  // of the first fault's report
	}{
		{"the loss inside the fault's window", []InjectedFault{restart(1190, 1200, 1320)}, nil, Pass,
			"state lost by the injected fault restart master at 0.2ms", 3},
		{"stretched to when the loss was seen over", []InjectedFault{restart(1190, 1195, 1200)}, nil, Pass, "3 definite violations attributed to it, excess 3", 3},
		{"a fault that never started", []InjectedFault{{Name: "kill", Err: "not injected"}}, nil, Inconclusive, "attributed to it", 0},
		{"a fault elsewhere", []InjectedFault{restart(1500, 1510, 1600)}, nil, Inconclusive, "127.0.0.1:7000 restarted", 0},
		{"a violation of its own after the loss", []InjectedFault{restart(1190, 1200, 1320)},
			[]Event{mustEvent(250, 250, 0, 0, 1, Admitted)}, Fail, "after 127.0.0.1:7000 restarted", 3},
		{"unknown outcomes inside the window are the fault's", []InjectedFault{restart(1190, 1200, 1320)},
			[]Event{mustEvent(300, 300, 0, 0, 1, Unknown)}, Pass, "all sent in the faults' windows", 3},
		{"unknown outcomes outside every window", []InjectedFault{restart(1190, 1200, 1320)},
			[]Event{mustEvent(390, 390, 0, 0, 1, Unknown), mustEvent(392, 392, 0, 0, 1, Unknown), mustEvent(394, 394, 0, 0, 1, Unknown)},
			Inconclusive, "unknown outcomes could hide", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, log, ds := restartHistory()
			log.Events = append(log.Events, tt.extra...)
			r, err := CheckEpochs(c, cloneLog(log), ds, 0)
			if err != nil {
				t.Fatal(err)
			}
			reps := faultReports(tt.fs, r, log, 1000)
			j := JudgeFaults(r, Warnings{}, log, tt.fs, reps)
			if j.Verdict != tt.verdict || !strings.Contains(strings.Join(j.Reasons, "; "), tt.reason) {
				t.Errorf("JudgeFaults = %+v; want %s with %q", j, tt.verdict, tt.reason)
			}
			if reps[0].Excess != tt.excess {
				t.Errorf("fault report %+v; want excess %d", reps[0], tt.excess)
			}
			if tt.verdict == Fail && JudgeEpochs(r, Warnings{}).Verdict != Fail {
				t.Errorf("JudgeEpochs does not fail where JudgeFaults does")
			}
			if JudgeEpochs(r, Warnings{}).Verdict == Fail && j.Verdict != Fail {
				t.Errorf("JudgeFaults passes what JudgeEpochs fails")
			}
		})
	}
	// A promotion whose former master is never seen to step down leaves the state unsettled to
	// the end: not a pass, and the fault's window is not stretched to infinity.
	{
		c, log, _ := restartHistory()
		ds := []Disruption{{Lo: 1195, Hi: 1212, Node: "r", Kind: "promoted", StateLost: true, Former: "m", What: "r was promoted"}}
		r, err := CheckEpochs(c, cloneLog(log), ds, 0)
		if err != nil {
			t.Fatal(err)
		}
		fs := []InjectedFault{restart(1190, 1200, 1320)}
		reps := faultReports(fs, r, log, 1000)
		j := JudgeFaults(r, Warnings{}, log, fs, reps)
		if j.Verdict != Inconclusive || !strings.Contains(strings.Join(j.Reasons, "; "), "unsettled to the end") || reps[0].UntilS > 1 {
			t.Errorf("unsettled promotion: %+v, report %+v; want inconclusive, the window as injected", j, reps[0])
		}
	}
	// Without any fault it is JudgeEpochs.
	c, log, ds := restartHistory()
	r, _ := CheckEpochs(c, log, ds, 0)
	if j, want := JudgeFaults(r, Warnings{}, log, nil, nil), JudgeEpochs(r, Warnings{}); j.Verdict != want.Verdict {
		t.Errorf("no faults: %v; want %v", j.Verdict, want.Verdict)
	}
}

// TestFaultReportsLatencyKeepsState is the regression test of issue 28 item 16's label: a
// latency on the replication link whose window meets the loss of a failover during it was
// reported as having lost the state, its window stretched to the loss's end; the failover lost
// it. A latency alone over a loss still shares it (no other fault can have caused it).
func TestFaultReportsLatencyKeepsState(t *testing.T) {
	c, log, ds := restartHistory()
	r, err := CheckEpochs(c, cloneLog(log), ds, 0)
	if err != nil {
		t.Fatal(err)
	}
	latency := InjectedFault{Name: "latency 500ms replication link of master at 0.1ms for 0.1ms", Kind: "latency", Target: "master",
		Lo: 1100, Hi: 1198, Until: 1250}
	failover := InjectedFault{Name: "failover master at 0.19ms", Kind: "failover", Target: "master", Lo: 1190, Hi: 1195, Until: 1300}
	fs := []InjectedFault{latency, failover}
	reps := faultReports(fs, r, log, 1000)
	stretched := seen(fs, r.Cuts)
	if reps[0].StateLost || stretched[0].Hi != latency.Hi {
		t.Errorf("latency's report %+v, window to %d µs; want the state kept, its window as injected (to %d µs)", reps[0], stretched[0].Hi, latency.Hi)
	}
	if !reps[1].StateLost || stretched[1].Hi != 1212 {
		t.Errorf("failover's report %+v, window to %d µs; want the state lost, its window stretched to the loss's end (1212 µs)", reps[1], stretched[1].Hi)
	}
	alone := faultReports([]InjectedFault{latency}, r, log, 1000)
	if !alone[0].StateLost {
		t.Errorf("a latency alone over the loss: %+v; want it to share the loss", alone[0])
	}
}
