package verify

import (
	"errors"
	"fmt"

	"github.com/limitbench/limitbench/algorithms"
)

// ErrNoModel is returned by Replay without a model.
var ErrNoModel = errors.New("no reference model")

// MaxReplayExamples is how many differing decisions a ReplayReport lists.
const MaxReplayExamples = 10

// ReplayDiff is one decision on which an algorithm and its reference model differ.
type ReplayDiff struct {
	Subject, Client string
	// At is the decision time in µs since the Unix epoch.
	At      int64
	Permits int64
	// Admitted is what the algorithm decided; the model decided the opposite.
	Admitted bool
}

// ReplayReport is the result of Replay.
type ReplayReport struct {
	// Replayed counts the decisions with an exact time (Lo == Hi) given to the model. Inexact
	// counts admitted or denied events with Lo < Hi, not replayed (their absence can itself make
	// later decisions differ); Excluded counts unknown and failed requests.
	Replayed, Inexact, Excluded int64
	// Differ counts the decisions that differ: AdmittedModelDenied + DeniedModelAdmitted.
	Differ, AdmittedModelDenied, DeniedModelAdmitted int64
	// Examples lists the first MaxReplayExamples differences in time order.
	Examples []ReplayDiff
}

// Replay gives the decisions of log that have an exact time (Lo == Hi, the time the algorithm
// returned) to m in time order, admissions first among equal times (the order in which a limiter
// must have taken them when they share a µs), and counts those on which m decides otherwise. m
// must be fresh; after a difference its state and the algorithm's part, so later differences may
// follow from the first. It reorders log.Events.
func Replay(m algorithms.Model, log *Log) (ReplayReport, error) {
	if m == nil {
		return ReplayReport{}, fmt.Errorf("replay: %w", ErrNoModel)
	}
	if err := log.validate(); err != nil {
		return ReplayReport{}, fmt.Errorf("replay: %w", err)
	}
	ev := log.Events
	n := partitionFunc(ev, func(e *Event) bool { return e.Kind() == Admitted || e.Kind() == Denied })
	exact := partitionFunc(ev[:n], func(e *Event) bool { return e.width() == 0 })
	r := replayRun{m: m, log: log}
	r.rep.Excluded, r.rep.Inexact = int64(len(ev)-n), int64(n-exact)
	ev = ev[:exact]
	sortByMid(ev)
	for i := range ev {
		r.take(&ev[i])
	}
	return r.rep, nil
}

// replayRun is Replay's pass of the exact decisions, taken one at a time in the order of
// sortByMid; log gives the names and Base.
type replayRun struct {
	m   algorithms.Model
	log *Log
	rep ReplayReport
}

// take gives the model e, an admitted or denied request with an exact time, the next in mid
// order, and counts it if the model decides otherwise.
func (r *replayRun) take(e *Event) {
	sub, cli := r.log.Subjects[e.Subject], r.log.Clients[e.Client]
	at := r.log.Base + e.Lo()
	got := r.m.Decide(sub, cli, int64(e.Permits), at)
	r.rep.Replayed++
	admitted := e.Kind() == Admitted
	if got == admitted {
		return
	}
	rep := &r.rep
	rep.Differ++
	if admitted {
		rep.AdmittedModelDenied++
	} else {
		rep.DeniedModelAdmitted++
	}
	if len(rep.Examples) < MaxReplayExamples {
		rep.Examples = append(rep.Examples, ReplayDiff{Subject: sub, Client: cli, At: at, Permits: int64(e.Permits), Admitted: admitted})
	}
}
