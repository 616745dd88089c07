package report

import (
	"fmt"
	"github.com/limitbench/limitbench/result"
	"strings"
)

// waitText describes, for the report's scenario section, the WAIT that followed every request of
// r (Settings.Wait) and, per entry, how many came back short (Entry.WaitShort) of its requests; ""
// when no WAIT was sent.
func waitText(r *result.Result) string {
	st := r.Scenario.Settings
	if st == nil || st.Wait == nil || !st.Wait.Enabled() {
		return ""
	}
	w := *st.Wait
	text := fmt.Sprintf("%s after every request, pipelined with it (wait_replicas %d, wait_timeout %d ms); latencies include it",
		w, w.Replicas, w.EffectiveTimeout().Milliseconds())
	if w.DenyShort {
		text += "; an admission whose WAIT came back short counts as a denial (wait_short: deny)"
	}
	var short []string
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.WaitShort == nil {
			continue
		}
		short = append(short, fmt.Sprintf("%s %s of %s", e.Name(), Number(float64(*e.WaitShort)), Number(float64(e.Requests))))
	}
	if len(short) > 0 {
		text += "; short (fewer replicas in time, or no answer): " + strings.Join(short, ", ")
	}
	return text
}
