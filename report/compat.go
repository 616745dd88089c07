package report

import (
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/verify"
)

// Names the regression gate (gate.go, gateshift.go and their tests) still uses, kept while the
// gate moves into a package of its own; each is the very type or value it names, not a copy.
// New code uses the names on the right.

// Verdict is verify.Verdict.
type Verdict = verify.Verdict

// The verdicts, verify's.
const (
	Pass         = verify.Pass
	Fail         = verify.Fail
	Inconclusive = verify.Inconclusive
)

// The verdict-table labels, by the names the gate knows them.
const (
	OutcomeCaught    = LabelCaught
	OutcomeMissed    = LabelMissed
	OutcomeTolerated = LabelTolerated
	OutcomeReference = LabelReference
)

// Outcome is Label.
func (e *Entry) Outcome() string { return e.Label() }

// Latency is load.Latency.
type Latency = load.Latency
