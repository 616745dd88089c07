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
	var rep ReplayReport
	ev := log.Events
	n := partitionFunc(ev, func(e *Event) bool { return e.Kind() == Admitted || e.Kind() == Denied })
	rep.Excluded = int64(len(ev) - n)
	exact := partitionFunc(ev[:n], func(e *Event) bool { return e.width() == 0 })
	rep.Inexact = int64(n - exact)
	ev = ev[:exact]
	sortByMid(ev)
	for i := range ev {
		e := &ev[i]
		sub, cli := log.Subjects[e.Subject], log.Clients[e.Client]
		at := log.Base + e.Lo()
		got := m.Decide(sub, cli, int64(e.Permits), at)
		rep.Replayed++
		admitted := e.Kind() == Admitted
		if got == admitted {
			continue
		}
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
	return rep, nil
}
