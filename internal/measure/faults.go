package measure

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/limitbench/limitbench/internal/faults"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// SettleTimeout bounds the wait, after a measurement with faults, for replication to be at rest
// again (faults.Watcher.WaitSettled): a Sentinel group turns a former master into a replica up to
// about 10 s after a failover (its INFO period), and a resync takes a few seconds more.
const SettleTimeout = 20 * time.Second

// Faults returns the stage that carries out a scenario's fault schedule during the load (on
// servers limitbench started; on an external Redis only client-side network faults):
//
//   - Setup: the measurement keeps its whole history (Measurement.WholeHistory); when the
//     schedule has a network fault, a proxy in front of every node
//     (faults.ProxyTarget) through which the load's client dials, and on the replication link
//     of every master a fault on that link targets (faults.RouteReplication);
//   - Start: the injector (faults.Inject), each fault at its time from the start of the
//     measured part;
//   - Observe: requests that met NOSCRIPT are noted, and while a restart or failover is under
//     way the guard is told to ignore unreachable outcomes;
//   - End: the injector stops and, unless the load failed, the node watch waits (at most
//     SettleTimeout) until replication is at rest again, so that what the faults set off after
//     the load (a Sentinel demoting the former master) is seen and judged;
//   - Verify: each fault's window (verify.InjectedFault) and the restarts, kills and failovers as
//     disruptions that cut the history;
//   - Report: each fault's NOSCRIPT count, and a warning when replication did not settle;
//   - Release: the proxies are closed.
func Faults(schedule []scenarios.Fault) Stage {
	f := &faultStage{schedule: schedule}
	return Stage{Setup: f.setup, Start: f.start, Observe: f.observe, End: f.end, Verify: f.verify, Report: f.report,
		Release: f.release}
}

// faultStage is the state of a Faults stage.
type faultStage struct {
	schedule  []scenarios.Fault
	netw      *faults.Network
	inj       *faults.Injector
	ns        noScripts
	injected  []faults.Injection
	unsettled error
}

func (f *faultStage) setup(ctx context.Context, m *Measurement) error {
	// The fault windows are given to the whole-history checker after the load (verify).
	m.WholeHistory = true
	if !faults.NeedsNetwork(f.schedule) {
		return nil
	}
	// The load reaches every node through a proxy, where network faults are injected.
	var err error
	if f.netw, err = faults.ProxyTarget(m.Spec.Target); err != nil {
		return fmt.Errorf("start the fault proxies: %w", err)
	}
	m.Client.Dialer = f.netw.Dialer()
	return faults.RouteReplication(ctx, m.Spec.Target, f.netw, f.schedule)
}

func (f *faultStage) start(ctx context.Context, m *Measurement, measured time.Time) {
	f.inj = faults.Inject(ctx, m.Spec.Target, f.netw, f.schedule, measured)
}

func (f *faultStage) observe(o *load.Outcome) bool {
	f.ns.observe(o)
	return f.inj.Busy()
}

func (f *faultStage) end(ctx context.Context, m *Measurement, err error) {
	if f.inj == nil {
		return
	}
	f.injected = f.inj.Stop()
	if err == nil && ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, SettleTimeout)
		defer cancel()
		f.unsettled = m.Watch.WaitSettled(sctx, len(m.Spec.Target.Masters()))
	}
}

func (f *faultStage) verify(m *Measurement, vm *verify.Measurement) {
	vm.Faults = m.Recording.injectedFaults(f.injected, m.Result)
	vm.Disruptions = append(vm.Disruptions, m.Recording.injectedDisruptions(f.injected, m.Result)...)
}

func (f *faultStage) report(m *Measurement, e *result.Entry) {
	addNoScripts(e.Verification.Faults, f.injected, &f.ns, m.Result)
	if f.unsettled != nil {
		e.Warnings = append(e.Warnings, result.Warning{Kind: "unsettled",
			Message: fmt.Sprintf("%v within %s of the load's end; what happened after that is not judged, and the next measurement may start on it", f.unsettled, SettleTimeout)})
	}
}

func (f *faultStage) release(ctx context.Context, _ *Measurement) {
	if f.netw != nil {
		_ = f.netw.Close(ctx)
	}
}

// noScripts records when requests met a NOSCRIPT error (their send offsets from the run's
// start), for the faults' reports; at most maxNoScripts are kept.
type noScripts struct {
	mu   sync.Mutex
	sent []time.Duration
}

const maxNoScripts = 1 << 20

// observe notes o when it met NOSCRIPT.
func (n *noScripts) observe(o *load.Outcome) {
	if o.Err == nil || !strings.Contains(o.Err.Error(), "NOSCRIPT") {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.sent) < maxNoScripts {
		n.sent = append(n.sent, o.Sent)
	}
}

// count returns how many NOSCRIPT errors met requests sent in [from, to] (offsets from the run's
// start).
func (n *noScripts) count(from, to time.Duration) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var c int64
	for _, s := range n.sent {
		if s >= from && s <= to {
			c++
		}
	}
	return c
}

// injectedFaults returns the injections as the verifier takes them: on the admission log's
// clock (rec's), each window from when the injector began acting to when it finished plus the
// fault's recovery.
func (r *Recording) injectedFaults(js []faults.Injection, res *load.Result) []verify.InjectedFault {
	out := make([]verify.InjectedFault, len(js))
	for i, j := range js {
		f := verify.InjectedFault{Name: j.Fault.Name(), Kind: string(j.Fault.Kind), Target: j.Fault.Target.String(), Nodes: j.Nodes}
		if j.Err != nil {
			f.Err = j.Err.Error()
		}
		if j.Promoted != "" {
			f.Name += " (promoted " + j.Promoted + ")"
		}
		if !j.Start.IsZero() {
			f.Lo, f.Hi = r.Log.Span(j.Start.Sub(res.Start), j.End.Sub(res.Start))
			_, f.Until = r.Log.Span(0, j.End.Sub(res.Start)+j.Fault.Recovery)
		}
		out[i] = f
	}
	return out
}

// addNoScripts fills in each fault report's NOSCRIPT count from ns.
func addNoScripts(reps []verify.FaultReport, js []faults.Injection, ns *noScripts, res *load.Result) {
	for i := range reps {
		if i < len(js) && !js[i].Start.IsZero() {
			reps[i].NoScript = ns.count(js[i].Start.Sub(res.Start), js[i].End.Sub(res.Start)+js[i].Fault.Recovery)
		}
	}
}

// injectedDisruptions returns the injections that may have lost the limiter's state (a restart,
// a kill, a failover, an eviction) as disruptions on the admission log's clock, so that the history is cut
// there even if the node watch did not see the change (it polls). Cutting only removes
// violations from the algorithm's account; the watch's own events, when it saw them, merge
// with these into one cut.
func (r *Recording) injectedDisruptions(js []faults.Injection, res *load.Result) []verify.Disruption {
	var out []verify.Disruption
	for _, j := range js {
		if !j.Fault.Kind.LosesState() {
			continue
		}
		if j.Start.IsZero() {
			continue
		}
		lo, hi := r.Log.Span(j.Start.Sub(res.Start), j.End.Sub(res.Start))
		measured := res.Start.Add(res.Plan.Warmup)
		out = append(out, verify.Disruption{Lo: lo, Hi: hi, Node: strings.Join(j.Nodes, ","), Kind: "injected " + string(j.Fault.Kind),
			StateLost: true, What: fmt.Sprintf("the injected %s (%.3fs to %.3fs)", j.Fault.Name(),
				j.Start.Sub(measured).Seconds(), j.End.Sub(measured).Seconds())})
	}
	return out
}
