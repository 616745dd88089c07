package measure

import (
	"fmt"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/result"
)

// StrictKeys returns the stage of a measurement whose scripts run behind the strict-keys guard
// (algorithms.WithStrictKeys): every command a script calls on a key not passed in KEYS is refused
// with a STRICTKEYS error, which the load counts as a failed request. The entry is marked
// (result.Entry.StrictKeys) and, when the guard refused anything, gets a portability warning
// (result.WarningStrictKeys) naming the first command and key it refused and how many requests.
// Function libraries called with FCALL are not guarded: callers refuse that combination before
// anything starts.
func StrictKeys() Stage {
	return Stage{PrepareContext: algorithms.WithStrictKeys, Report: reportStrictKeys}
}

func reportStrictKeys(_ *Measurement, e *result.Entry) {
	e.StrictKeys = true
	for _, c := range e.ErrorClasses {
		if c.Kind != algorithms.StrictKeysCode {
			continue
		}
		first := c.First
		if i := strings.Index(first, algorithms.StrictKeysCode+" "); i >= 0 {
			first = first[i+len(algorithms.StrictKeysCode)+1:]
		}
		if i := strings.Index(first, " script: "); i >= 0 { // Redis's "script: SHA, on @user_script:N."
			first = first[:i]
		}
		msg := fmt.Sprintf("not portable: %s (first at %.3fs; %d requests refused): Dragonfly, Kvrocks and Upstash refuse a script that touches a key not passed in KEYS, "+
			"and a Redis Cluster may keep such a key on another node; pass every key the script touches in KEYS", first, c.FirstAtS, c.Count)
		if strings.HasPrefix(first, "the check of ") {
			msg = fmt.Sprintf("the strict-keys guard could not check the script's keys: %s (%d requests refused); give the user +command|getkeys", first, c.Count)
		}
		e.Warnings = append(e.Warnings, result.Warning{Kind: result.WarningStrictKeys, Message: msg})
	}
}
