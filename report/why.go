package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Why says, in words, why e (an entry of r) got the verdict it got, from what limitbench knows:
// the algorithm's known flaw (algorithms' Description), the scenario's conditions (skewed
// clocks, concurrent clients, faults, warmup) and the evidence (the worst window's subject,
// clients and times, from the entry's excerpt). It explains every fail, expected violation
// (caught or missed), tolerated fail and inconclusive entry, and a pass whose worst window is
// above its limit or that has possible violations: what in its contract (a fixed window, a clock
// granularity) or in the figure excuses it, with the numbers. It returns "" for any other pass
// and for the reference script.
func Why(r *result.Result, e *result.Entry) string {
	if r.IsReference(e) {
		return ""
	}
	w := whyOf(r, e)
	var s []string
	switch label := e.Label(); {
	case e.Verification.DefiniteViolations > 0 && label != string(verify.Pass):
		s = w.overAdmitted()
	case label == result.LabelMissed:
		s = w.missed()
	case label == string(verify.Inconclusive) || label == string(verify.Fail):
		s = w.noVerdict()
	case label == string(verify.Pass):
		s = w.excused()
	}
	return strings.Join(s, " ")
}

// why holds what Why draws on for one entry.
type why struct {
	r        *result.Result
	e        *result.Entry
	st       result.Settings
	desc     algorithms.Description // zero for a custom script
	contract algorithms.Contract
	parsed   bool
}

func whyOf(r *result.Result, e *result.Entry) why {
	w := why{r: r, e: e}
	if r.Scenario.Settings != nil {
		w.st = *r.Scenario.Settings
	}
	if a, err := algorithms.Lookup(e.Algorithm); err == nil && !e.Custom {
		w.desc = a.Describe()
	}
	if c, err := algorithms.ParseContract(e.Verification.Contract); err == nil {
		w.contract, w.parsed = c, true
	}
	return w
}

// seconds renders a time in seconds from the start of the measured part: "0.635 s", with a
// no-break space, so that a wrapped line keeps the number with its unit.
func seconds(s float64) string { return fmt.Sprintf("%.3f\u00a0s", s) }

// overAdmitted explains definite violations: the evidence, the known flaw and the conditions.
func (w why) overAdmitted() []string {
	out := []string{w.evidence()}
	if w.desc.Flaw != "" {
		out = append(out, sentence("Known flaw of "+w.e.Algorithm+": "+w.desc.Flaw))
	} else {
		out = append(out, "limitbench knows no flaw of "+w.e.Algorithm+"; the conditions of the run are what it had to withstand.")
	}
	out = append(out, w.conditions()...)
	return out
}

// evidence describes the worst violating set: from the excerpt, with the clients that decided
// it and their clocks, else from the verification's words.
func (w why) evidence() string {
	x := w.e.Excerpt
	if x == nil || x.Violation != "definite" {
		if where := w.e.Verification.Where; where != "" {
			return sentence("The worst window: " + where)
		}
		return fmt.Sprintf("It admitted more than %s allows.", orDefault(w.e.Verification.Contract, "its contract"))
	}
	s := fmt.Sprintf("The worst window: %s admitted %s permits where %s %s allowed, between %s and %s",
		scopeName(x), Count(x.Permits), Count(x.Allowed), Plural(x.Allowed, "was", "were"), seconds(float64(x.FromUS)/1e6), seconds(float64(x.ToUS)/1e6))
	if clients := w.windowClients(x); clients != "" {
		s += ", decided by " + clients
	}
	return s + "."
}

// scopeName names the scope of x: "subject s2", "subject s2 client c3", "consumer c3".
func scopeName(x *verify.Excerpt) string {
	switch {
	case x.Subject != "" && x.Client != "":
		return "subject " + x.Subject + " client " + x.Client
	case x.Subject != "":
		return "subject " + x.Subject
	}
	return "consumer " + x.Client
}

// windowClients describes the clients whose admissions of the broken scope lie in x's worst
// window: "12 clients (4 with their clock 2s ahead, 4 on time, 4 2s behind)"; their clocks only
// when the scenario skews them.
func (w why) windowClients(x *verify.Excerpt) string {
	seen := map[int]bool{}
	bySkew := map[time.Duration]int{}
	for _, q := range x.Requests {
		if q.K != "a" || !q.S || q.Hi < x.FromUS || q.Lo > x.ToUS || seen[q.Lane] {
			continue
		}
		seen[q.Lane] = true
		if c := x.LaneClients[q.Lane]; c >= 0 && w.st.Clients > 0 {
			bySkew[w.st.ClockSkew.Offset(c, w.st.Clients)]++
		}
	}
	if len(seen) == 0 || x.Scope == "consumer" {
		return ""
	}
	s := fmt.Sprintf("%d %s", len(seen), Plural(int64(len(seen)), "client", "clients"))
	if w.st.ClockSkew.IsZero() || len(bySkew) == 0 {
		return s
	}
	var parts []string
	for _, d := range slices.Sorted(mapKeys(bySkew)) {
		parts = append(parts, fmt.Sprintf("%d %s", bySkew[d], skewWords(d, bySkew[d])))
	}
	return s + " (" + strings.Join(parts, ", ") + ")"
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// skewWords says where a clock offset puts the clocks of n clients.
func skewWords(d time.Duration, n int) string {
	clock := Plural(int64(n), "its clock", "their clocks")
	switch {
	case d > 0:
		return "with " + clock + " " + d.String() + " ahead"
	case d < 0:
		return "with " + clock + " " + (-d).String() + " behind"
	}
	return "on time"
}

// conditions describes the scenario's conditions that bear on the entry: clock skew for an
// algorithm that decides by the caller's clock, concurrent clients for one that is not atomic,
// faults and lost state.
func (w why) conditions() []string {
	var out []string
	client := w.desc.Clock == algorithms.ClockClient
	switch {
	case client && !w.st.ClockSkew.IsZero():
		out = append(out, fmt.Sprintf("The scenario skews the clients' clocks (%s) and %s decides by the caller's clock, so the skew reaches its decisions.",
			w.st.ClockSkew, w.e.Algorithm))
	case client && w.st.Arrival != nil && w.st.Arrival.TraceFile != "":
		out = append(out, fmt.Sprintf("%s decides by the caller's clock, and the trace %s gives each request its client's clock offset (a jump of a client's clock shows as a change of its offset).",
			w.e.Algorithm, w.st.Arrival.TraceFile))
	case client:
		out = append(out, w.e.Algorithm+" decides by the caller's clock; the scenario does not skew the clients' clocks.")
	}
	if strings.Contains(w.desc.Flaw, "atomic") && w.st.Clients > 1 {
		out = append(out, fmt.Sprintf("%d clients send at the same time, so its separate commands interleave.", w.st.Clients))
	}
	v := w.e.Verification
	if len(w.st.Faults) > 0 {
		s := "The scenario injects " + strings.Join(w.st.Faults, "; ")
		if v.FaultExcess > 0 {
			s += fmt.Sprintf(", and %s %s over the contract fell in the faults' windows", Count(v.FaultExcess), Plural(v.FaultExcess, "permit", "permits"))
		}
		out = append(out, sentence(s))
	}
	if v.Epochs > 0 && v.AttributedViolations > 0 {
		out = append(out, fmt.Sprintf("Redis may have lost the limiter's state during the run; %s %s across the loss %s attributed to it, not to the algorithm.",
			Count(v.AttributedViolations), Plural(v.AttributedViolations, "violation", "violations"), Plural(v.AttributedViolations, "is", "are")))
	}
	return out
}

// missed explains an expected violation that was not found.
func (w why) missed() []string {
	out := []string{fmt.Sprintf("The scenario expects %s to be flagged, but no set of its admissions broke %s in every placement of its decision times.",
		w.e.Algorithm, orDefault(w.e.Verification.Contract, "its contract"))}
	if w.desc.Flaw != "" {
		out = append(out, sentence("Its known flaw: "+w.desc.Flaw))
	}
	out = append(out, w.conditions()...)
	if w.desc.Clock == algorithms.ClockClient && w.st.ClockSkew.IsZero() {
		out = append(out, "A flaw of the caller's clock shows only with skewed clocks: give the scenario a clock_skew.")
	}
	return out
}

// noVerdict explains an inconclusive entry, or a fail without a definite violation (a broken
// threshold): its reasons, and what the run's settings say about the commonest of them.
func (w why) noVerdict() []string {
	v := w.e.Verification
	var out []string
	if len(v.Reasons) > 0 {
		out = append(out, sentence(upperFirst(strings.Join(v.Reasons, "; "))))
	}
	if slices.Contains(v.Reasons, "no request was admitted") {
		out = append(out, w.nothingAdmitted())
	}
	behind := slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, "behind") })
	if v.Verdict == verify.Inconclusive && w.e.LateFraction > 0.01 && !behind {
		out = append(out, fmt.Sprintf("%s of requests went out late: the machine could not keep to the schedule, so the run cannot say what the limiter would have done on time.",
			Percent(w.e.LateFraction)))
	}
	return out
}

// nothingAdmitted explains a measured part without one admission.
func (w why) nothingAdmitted() string {
	win := w.window()
	run := time.Duration((w.st.WarmupS + w.st.DurationS) * float64(time.Second))
	if win > 0 && w.st.WarmupS > 0 && win >= run {
		return fmt.Sprintf("Its window (%s) outlasts the warmup and the measured part together (%s + %s), so the warmup's requests most likely used up every subject's %s permits of the window already: a run longer than the window, or one without a warmup, gives it a verdict.",
			win, Number(w.st.WarmupS)+" s", Number(w.st.DurationS)+" s", Count(w.contract.Limit))
	}
	return "Every request of the measured part was denied or failed: nothing admitted, nothing to verify."
}

// window is the window of the entry's first limit (0 for a token bucket or no contract).
func (w why) window() time.Duration {
	if !w.parsed || w.contract.Kind == algorithms.TokenBucket {
		return 0
	}
	return w.contract.Window
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// excused explains a pass that shows a worst window above its limit or possible violations:
// what in its contract or in the figure allows it, with the numbers. Nothing for a plain pass.
func (w why) excused() []string {
	v := w.e.Verification
	var out []string
	if w.e.Accuracy.MaxWindowRatio > 1.005 {
		out = append(out, w.worstWindow())
	}
	if v.PossibleViolations > 0 {
		out = append(out, w.possible())
	}
	return out
}

// worstWindow explains a passing entry's worst window above its limit.
func (w why) worstWindow() string {
	r, c := w.e.Accuracy.MaxWindowRatio, w.contract
	held, certain := w.maxHeld()
	switch {
	case !w.parsed:
		return fmt.Sprintf("Its busiest window held %s of its limit; its contract (%q) could not be read to say why that passes.", Percent(r), w.e.Verification.Contract)
	case c.Kind == algorithms.FixedWindow && r <= 2.0005:
		s := fmt.Sprintf("Its busiest sliding window held %s of its limit (%s of %s permits within %s), which %s allows: it counts aligned windows of %s, and up to %s at the end of one and %s at the start of the next fall within %s",
			Percent(r), Number(r*float64(c.Limit)), Count(c.Limit), c.Window, c, c.Window, Count(c.Limit), Count(c.Limit), c.Window)
		if certain {
			s += "; no aligned window held more than " + Number(held)
		}
		return s + "."
	case c.Kind == algorithms.SlidingWindow && 2*c.Granularity >= c.Window:
		k := int64(2*c.Granularity/c.Window) + 1
		s := fmt.Sprintf("Its contract states a clock granularity of %s: each decision time is known only to within %s either way, so an over-admission can be proven only when more than %d × %s = %s permits fall within %s. Its busiest %s held %s of its limit (%s permits) at the requests' midpoints",
			c.Granularity, c.Granularity, k, Count(c.Limit), Count(k*c.Limit), time.Duration(k)*c.Window, c.Window, Percent(r), Number(r*float64(c.Limit)))
		if certain {
			s += fmt.Sprintf(", and no %s certainly held more than %s", time.Duration(k)*c.Window, Number(held))
		}
		return s + "."
	}
	s := fmt.Sprintf("The worst-window figure (%s) places each request at the middle of its decision interval and counts the warmup's admissions with the measured part's", Percent(r))
	skewed := w.maxAhead() > 0 && w.desc.Clock == algorithms.ClockClient
	if skewed {
		s += fmt.Sprintf(" (clients whose clocks run up to %s ahead date their warmup admissions inside the measured part)", w.maxAhead())
	}
	s += "; the verifier checks the measured part alone, on the decision intervals themselves"
	if !certain {
		return s + "."
	}
	allowed := w.e.Timeline.Use[0].Allowance
	if held <= allowed {
		return s + fmt.Sprintf(", and %s of it certainly never went over %s of its allowed %s.", useWords(c), Number(held), Number(allowed))
	}
	s += fmt.Sprintf(", and found no set of its admissions over the limit. The plot counts the warmup's admissions decided before the measured part too, and shows %s permits certainly in one window where %s are allowed",
		Number(held), Number(allowed))
	if skewed {
		s += fmt.Sprintf(": with clocks skewed by up to %s, admissions of the warmup and of the measured part share windows on the clients' clocks", w.maxAhead())
	}
	return s + ". This pass covers the measured part only."
}

// useWords names what the first limit's use counts, for a sentence.
func useWords(c algorithms.Contract) string {
	if c.Kind == algorithms.TokenBucket {
		return "the bucket"
	}
	return "a window"
}

// maxHeld returns the most the entry's first limit certainly held in one window (its
// timeline's use), and whether that was measured.
func (w why) maxHeld() (float64, bool) {
	if len(w.e.Timeline.Use) == 0 {
		return 0, false
	}
	return slices.Max(w.e.Timeline.Use[0].Held), len(w.e.Timeline.Use[0].Held) > 0
}

// maxAhead is how far the scenario puts the clock of its most advanced client ahead.
func (w why) maxAhead() time.Duration {
	sk := w.st.ClockSkew
	ahead := sk.Spread
	for _, d := range sk.Offsets {
		ahead = max(ahead, d)
	}
	return ahead
}

// possible explains a passing entry's possible violations.
func (w why) possible() string {
	v, x := w.e.Verification, w.e.Excerpt
	within := "within their intervals"
	if w.parsed && w.contract.Granularity > 0 {
		within += " and the " + w.contract.Granularity.String() + " clock granularity"
	}
	s := fmt.Sprintf("%s possible %s could not be ruled out: for some placements of the decision times %s, a window holds more than the contract allows",
		Count(v.PossibleViolations), Plural(v.PossibleViolations, "violation", "violations"), within)
	if x != nil && x.Violation == "possible" {
		s += fmt.Sprintf(" (at worst %s permits where %s %s allowed, %s, between %s and %s)", Count(x.Permits), Count(x.Allowed),
			Plural(x.Allowed, "was", "were"), scopeName(x), seconds(float64(x.FromUS)/1e6), seconds(float64(x.ToUS)/1e6))
	}
	return s + "; none holds in every placement, so none fails the run."
}
