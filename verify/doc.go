// Package verify decides whether a rate limiter kept its contract, from a log of the decisions it
// made under load. It owns the admission log (AdmissionLog, the load.Aggregator that records a
// run's outcomes, and the Event and Log it hands the checker), the over-admission checker
// (Check), its check in epochs where Redis may have lost the state (Disruption, CheckEpochs), the
// exact ideal limiter behind the accuracy figures (Accuracy), the replay of decision times through
// an algorithm's reference model (Replay), the verdict (Verdict, JudgeWith, JudgeEpochs), and
// its own sections of a result entry: the verification (Summary, with the thresholds checked
// against it and what they do to the verdict, the pressure on the contract, and a finding in
// words) and the accuracy (AccuracySummary), which Measurement.Sections builds from one
// measurement's logs, with the contract's limit per timeline bin (Measurement.BinLimits). The
// streaming checker (Stream, MeasurementStream, and StreamLog, the aggregator that feeds it)
// gives the same answers while holding only what a later violation can still include (see
// "Streaming" below); the whole-history checker stays the reference. It also owns the sorted
// log file a segment of a segmented run writes and its merge reads as a stream
// (AdmissionLog.WriteSorted, LogReader), and the join of the verifications and accuracies of a
// history's parts split by scope, a sharded merge's shards (JoinSummaries, JoinAccuracy).
//
// # Use as a library
//
// The package is public so that a team whose limiter is Go code can check it from its own
// tests; package limitbenchtest drives a limiter and fails a test with this package's finding.
// Three steps need nothing but this package and algorithms.Contract:
//
//   - a contract: SlidingWindow, FixedWindow, FirstHitWindow, TokenBucket or GCRA (set its
//     Granularity to a coarse clock's resolution, its Scope, its Also), or
//     algorithms.ParseContract of the text limitbench writes ("token-bucket(10, 5/1s)");
//   - a log: a Recorder, given subject, client, permits, send and receive time (or the
//     decision time twice) and the outcome (Admitted, Denied, Unknown, Failed) of every request;
//   - the check: Check for the definite and possible violations and the worst excess of each
//     limit (Report, LimitReport), Accuracy for how close the limiter came to an exact one,
//     JudgeWith for the verdict.
//
// The rest (AdmissionLog, StreamLog, Measurement and the result sections) is what the
// limitbench command uses; some of it takes the harness's internal types.
//
// Stability: v0. The API may change before limitbench's v1; the semantics below do not change
// without the specification changing with them.
//
// # Times are intervals
//
// Every Event says only that its decision happened at some instant in [Lo, Hi], in microseconds
// relative to Log.Base (itself µs since the Unix epoch): [send, receive] on the harness clock, or
// narrower where the load generator knew the server's decision time (see AdmissionLog). An
// unknown outcome is the exception: only its Lo bounds it (see below).
//
// An Event takes 16 bytes. Lo is exact within ±2^39 µs (6.36 days) of Base; the width Hi − Lo is
// exact below 2^20 µs (about 1.05 s) and above that rounded up to 20 significant bits (steps of
// 1.024 ms up to 18 minutes, coarser beyond; see Event). This rounding is a deliberate, safe
// widening: Hi is never earlier than the receive time it was given, and a wider interval can
// turn a definite violation into a possible one, never the reverse, so it cannot flag a correct
// limiter. Exact times (Lo == Hi) stay exact. Everything the package reports (Where,
// Violation.At, AccuracyBin.Start, ReplayDiff.At) is absolute, Base added; Log.From is absolute
// too. A contract with clock granularity G
// (Contract.Granularity, rounded up to whole µs: a wider interval is the safe side) may read any
// time within G of the true one, whatever its rounding, so the checker widens every interval to
//
//	[Lo − G, Hi + G]
//
// and adds no other tolerance. A placement picks one instant x_i in each widened interval.
// A violation is definite when it holds for every placement, and possible when it holds for some.
//
// # Contracts
//
// Permits are counted per scope: per subject, per (subject, client) or per client across subjects
// (Contract.Scope). With W, G and the times in µs and P(S) the permits of a set S of admissions:
//
//   - sliding-window(L, W): every half-open interval (t−W, t] holds at most L permits, so a set S
//     violates it when P(S) > L and max x − min x < W over S.
//   - fixed-window(L, W): every aligned window [kW, (k+1)W) of Unix time holds at most L permits
//     (aligned on the epoch, whatever Log.Base is).
//   - token-bucket(C, r), r = RefillPermits/RefillPer = p/q permits per µs (p/q is
//     RefillPermits·1000 over RefillPer in ns, reduced: exact for any period): every closed
//     interval [t1, t2] holds at most C + r·(t2 − t1) permits, so S violates it when
//     q·P(S) > q·C + p·(max x − min x). Decisions use this exact integer form; no floats.
//   - first-hit-window(L, W): windows begin at the first request (admitted or not) that
//     reaches the limiter after the previous window ended, and last W; each holds at most L
//     permits. Over the instants x_1 ≤ x_2 ≤ … of the requests that reached it, the windows
//     are [s_k, s_k + W) with s_{k+1} = min{x_i : x_i ≥ s_k + W}. Its windows depend on every
//     request, so it has a section of its own below.
//
// Nothing that sets an allowance is rounded: a window W that is not a whole number of µs is
// refused with ErrBadContract (rounding it would move fixed-window's aligned windows, and rounding
// it up would shrink a sliding window's allowance and could flag a correct limiter).
//
// c.Also lists further contracts (two limits at once); each is checked on its own and reported in
// its own LimitReport.
//
// # What Check computes
//
// The checker looks for sets S of admissions (events of kind Admitted) of one scope; lo and hi
// below are widened bounds. This section is about sliding-window, fixed-window and
// token-bucket; first-hit-window has one of its own after it.
//
// Definite, sliding-window. With K = ⌊2G/W⌋ + 1, a set S violates definitely when
//
//   - (i) P(S) > K·L and max hi − min lo < K·W over S: every placement puts S in the K
//     back-to-back windows (max hi − kW, max hi − (k−1)W], k = 1…K, which are disjoint and
//     cover (max hi − K·W, max hi] ⊇ [min lo, max hi]; holding at most L each, they hold at most
//     K·L, so in every placement one of them holds more than L; or
//   - (ii) S is one admission and P(S) > L: one decision is one instant, inside one window in
//     every placement, however wide its interval.
//
// K is the fewest such windows a set can need: widened, every set spans at least 2G, and
// (K−1)·W ≤ 2G < K·W, so (i) takes exactly the sets spanning less than K·W, over which K·L is
// what the contract allows. The bound is tight: K·L permits decided at one instant are
// consistent with the contract (L at each of K instants W apart, within G of it). With 2G < W,
// K = 1 and (i) is P(S) > L within a span under W: every placement puts S in the window
// (max hi − W, max hi]. A coarse granularity raises the bar without removing it: a script on
// whole seconds of the clock (G = 1 s) with a window of 1 s (K = 3) is proven wrong by more than
// 3L permits decided within less than 1 s of each other (their widened span then under 3 s), or
// by one admission of more than L; its up to 2L permits across one tick of its clock are what
// such a clock allows. Longer sets (a span D needs ⌊D/W⌋ + 1 windows) are not examined.
//
// Definite, token-bucket: q·P(S) > q·C + p·(max hi − min lo). Definite, fixed-window: more than L
// permits whose intervals lie wholly inside one aligned window. For these three kinds the
// conditions are sufficient, never more: a history can violate a contract under every
// placement through different windows in different placements (an admission that straddles an
// aligned boundary between two windows that each hold L, say), and such a case split is not
// reported. First-hit-window decides its case splits (condition (d) below).
//
// Possible, sliding-window: P(S) > L and max lo − min hi < W (the intervals can all be placed in
// one window). Possible, token-bucket: q·P(S) > q·C + p·max(0, max lo − min hi). Possible,
// fixed-window: more than L permits whose intervals meet one aligned window. These are exact: a
// placement violating the contract exists if and only if such a set exists.
//
// Counting. For sliding-window and token-bucket, Definite is the number of distinct instants
// b = max hi(S) over definitely violating sets S (the ends of violating windows: L+k admissions at
// distinct instants inside one window give k), and Possible the number of distinct instants
// b = max lo(S) over possibly violating sets. For fixed-window both count aligned windows. The
// worst excess is the largest P(S) − allowed(S), where allowed(S) is L (for sliding-window, K·L
// under (i) and L under (ii)), or
// C + ⌊r·(max hi − min lo)⌋ (definite) and C + ⌊r·max(0, max lo − min hi)⌋ (possible) for
// token-bucket; Where names its scope and the span [min lo, max hi] of the worst set.
//
// Unknown outcomes (Kind Unknown: the request may or may not have been admitted) are never counted
// as admissions, so they never create a violation, and they cannot remove one either. Only an
// unknown outcome's Lo (when it was sent) bounds its time: its Hi is when the harness gave up, and
// the request may have run at any instant x ≥ Lo, even after the run ended. When no definite
// violation exists, Check asks whether the unknown outcomes could hide one: whether some set of
// admissions and unknown outcomes, at least one unknown, violates the contract definitely for
// some choice of the unknowns' instants x ≥ Lo, each widened to [x − G, x + G]. The largest excess
// of such a set is LimitReport.UnknownExcess; when it is positive, UnknownCouldHide is set and
// JudgeWith says inconclusive. (An unknown outcome can join a window that ends at b ≥ Lo + G and is
// at least 2G long, so a run that fills its windows to the limit and has one unknown outcome is
// inconclusive: had that request been admitted, the verdict would be fail.)
//
// # First-hit windows
//
// A first-hit window starts at a request, so where the windows lie depends on every request
// that reached the limiter: denials too, and the unknown and failed requests that may have run
// (a script error is a failed request, and it may have opened a window before it failed). A
// world is one account of a scope's history consistent with the log: which unknown and failed
// requests reached the limiter (an unknown one that did is not counted as admitted here; see
// below), a real instant x_i in each widened interval of those that did (an unknown outcome's
// interval is [Lo − G, +∞)), and what came before the log: unless Log.Fresh, a window may be
// open when the log starts, begun at any earlier instant, so the first window holding a
// request of the log starts at any s_1 in (min x − W, min x]. A world violates the contract
// when one of its windows holds more than L admitted permits. A violation is definite when
// every world violates, possible when some does. The log must hold every request of the scope
// that may have run from its earliest event on (one left out could have opened a window
// anywhere): give Check a warmup's events too, with Log.From at the end of the warmup, as
// Measurement.Sections does. They take part in the windows, and only violations that end at or
// after From (at max hi for definite ones, max lo for possible ones) are counted.
//
// Exact answers take a search over worlds (with permits, choosing windows is a partition
// problem), so Check reports definite violations by four sufficient conditions, and possible
// ones by a condition that is necessary (no world's violation is missed) and exact when the
// world is unique. With lo and hi the widened bounds, a set S of admissions of one scope
// violates definitely when P(S) > L and
//
//   - (a) S is one admission (of more than L permits), or G = 0 and S's admissions were
//     decided at one exact instant (Lo = Hi = t): one instant is in one window;
//   - (b) P(S) > 2L + L·(max hi − min lo)/W (W·P(S) > 2LW + L·span in integers; the excess is
//     P(S) − 2L − ⌊L·span/W⌋): a span d meets at most ⌈d/W⌉ + 1 ≤ 2 + d/W disjoint windows of
//     length W, each holding at most L. It is the token-bucket condition with C = 2L and
//     r = L/W, and holds whatever opened the windows;
//   - (c) min lo(S) ≥ y + W, where y is the latest point of P̂ at or before max hi(S) − W (no
//     condition when there is none): the window holding the earliest admission of S started
//     at a point of P̂ after max hi(S) − W, so it holds all of S.
//   - (d) P(S) > N·L, N the number of clumps of P̂ that hold a point of
//     [min lo(S) − W + 1, max hi(S)]. P̂ is cut into clumps from its left: γ_1 is its least
//     point, γ_{i+1} its least point at or after γ_i + W, and clump i is the part of P̂ in
//     [γ_i, γ_i + W − 1]. Each admission of S lies, at x, in a window that starts at s with
//     x − W < s ≤ x, so ⌈s⌉ is a point of P̂ in [min lo − W + 1, max hi]; two windows of one
//     world start at least W apart (⌈s'⌉ ≥ ⌈s⌉ + W), so a clump, narrower than W, holds the
//     start of at most one of them. At most N windows hold S, each at most L permits.
//
// Condition (d) decides the case splits that (c) cannot. Say a window's start is pinned (a
// fresh log, or a quiet spell longer than W before it), it takes L permits, one more admission
// lies near its end, and the next window takes L more soon after: in the worlds where the
// extra admission falls before the window's end it is the window's (L+1)-th permit, in the
// others it opens (or falls in) the next window, which then holds L + 1. The two windows' starts
// lie in two clumps, and the 2L + 1 permits beat 2L: definite. When a flaw repeats at every
// window's end (issue 29: a script that admits a request reaching a full window in its key's
// last millisecond), the sets from the pinned start on hold one permit more per window than
// their clumps allow, and every such end is found. With Log.From, a set of (d) counts only when
// the windows it counts can all hold an admission at or after From (min lo(S) ≥ From, or the
// first clump counted begins at or after From − W + 1); else the window it overfills may have
// ended before From.
//
// P̂, a set of integer instants, holds every window start of every world (a start s as ⌈s⌉).
// It is the union of the chain's ranges [u_k, v_k] intersected with the union of every
// request's interval (a window after the first starts at a request), joined, without
// Log.Fresh, with the first range whole (the first window may have begun before the log, at
// no request of it). The chain follows the windows in order; with m the least lo of the
// scope's requests and "sure" requests the admitted and denied ones:
//
//	u_1 = m (Log.Fresh) or m − W + 1,     v_1 = min{hi : sure},
//	u_{k+1} = max(u_k + W, min{lo : any request, hi ≥ u_k + W}),
//	v_{k+1} = min{hi : sure, lo ≥ v_k + W},
//
// ending after a range whose v is +∞, or when no request has hi ≥ u_k + W. In every world the
// k-th window starts at s with u_k − 1 < s ≤ v_k: s_{k+1} ≥ s_k + W and is the instant of a
// request at or after s_k + W, while a sure request of lo ≥ v_k + W is at or after the k-th
// window's end, so s_{k+1} is at most its hi. Where a window's existence is in doubt the
// chain's index can skip one, which is why (c) looks at P̂'s points rather than at indices:
// after a quiet spell longer than W no point of P̂ lies inside it, and the first request after
// it opens a window in every world.
//
// Conditions (a) and (b) hold in every world of any log, even one missing requests; (c) and
// (d) rest on the log holding every request that reached the limiter, with its true time.
// LimitReport.Chained counts the definite violations that only (c) or (d) finds, and JudgeWith does
// not fail a run on them when outcomes were dropped or decision times mismatched the harness
// clock.
//
// Possible: S possibly violates when P(S) > L and some point s of P̂ has s ≥ max lo(S) − W + 1
// and s ≤ min hi(S): all of S can then lie in [s, s + W). Every world's violating window
// starts at a point of P̂ and holds such a set, so no possible violation is missed; with one
// world (exact times, G = 0, Log.Fresh, no unknown or failed request) P̂ is exactly the
// windows' starts and both answers are exact.
//
// Counting. Definite is the number of distinct ends b = max hi(S) over definitely violating
// sets S, Chained those found only by (c) or (d); Possible the number of distinct b = max lo(S)
// over possibly violating sets. The worst excess is the largest P(S) − allowed(S), allowed(S)
// being L, 2L + ⌊L·span/W⌋ for (b), or N·L for (d); Worst describes it (for (d), the set
// {lo ≥ a, hi ≤ b} of the largest a with that excess), WorstUnchained the worst of (a) and (b).
// A definite violation of (b) or (d) spans several windows, so Definite can exceed Possible,
// which counts sets that fit one window.
//
// Unknown outcomes. An unknown outcome's instant moves the windows too, so UnknownExcess for
// first-hit-window bounds what the unknown outcomes could hide from above, over the whole log
// (From aside): per scope with unknown outcomes, the larger of the token-bucket hide of condition (b) (C = 2L, r = L/W; see
// Unknown outcomes above) and the largest P{admissions: lo ≤ s + W − 1, hi ≥ s} + U(s) − L
// over the points s of P̂ with U(s) = P{unknown outcomes: lo ≤ s + W − 1} > 0: what can lie
// in a window [s, s + W), the unknown outcomes counted as admissions. Whatever became of the
// unknown outcomes (not run, or run at any instants, admitted or denied), a definite violation
// of the history they leave is either one of the log as it is or counted here.
//
// # Verdict
//
// JudgeWith turns a Report and the run's Warnings into pass, fail or inconclusive:
//
//   - fail on a definite violation of any limit, whatever else happened: unknown outcomes,
//     dropped outcomes and a schedule that fell behind only hide admissions, so they never
//     excuse one. The exception is clock mismatches (decisions whose server time disagreed with
//     the harness clock): a mismatched admission's logged time may be wrong, so with m of them a
//     violation fails the run only if its worst set stays over its allowance after removing any
//     m admissions, Worst.Excess > m·MaxPermits; otherwise it makes the run inconclusive.
//     First-hit-window's Chained violations make the run inconclusive, not failed, when any
//     outcome was dropped or any decision time mismatched (see First-hit windows).
//   - inconclusive when no limit fails but the run cannot support a pass: no contract, no
//     admission, the schedule fell behind, unknown outcomes could hide a definite violation,
//     any clock mismatch, or any dropped outcome.
//   - pass otherwise. A canceled run is judged on what it measured, with a reason that says so.
//
// # When Redis loses the state: epochs
//
// A restart without persistence, a flush or a promotion of a lagging replica takes the
// limiter's state away: after it, a correct limiter admits as if nothing came before, so a
// window that reaches across the loss can hold more than the contract allows. The node watch
// (package faults) sees such changes; they come here as Disruptions on the log's clock, each
// with the span [Lo, Hi] that holds the instant it happened. CheckEpochs cuts the history at
// every span that may have lost the state (Cuts: overlapping spans merge; a promotion lasts
// until its former master is seen deposed) and checks each epoch apart (Split), besides the
// history as one. An admission belongs to the epoch its whole interval [Lo, Hi] lies in, strictly
// between two cuts; one that meets a cut could be on either side and is in none (Unplaced). So
// every admission of an epoch was decided on a state that held the epoch's earlier admissions
// and nothing lost, and a correct limiter keeps its contract over each epoch alone: cutting can
// only remove violations, never make one, and a definite violation within an epoch is the
// algorithm's. JudgeEpochs fails on such a violation; otherwise the verdict is inconclusive, with
// a reason naming each cut and the definite violations of the history as one that no epoch shows
// (Attributed: they reach across a loss and are the disruption's, not the algorithm's). A loss
// that ended before the measured part does not cut it.
//
// # Accuracy and replay
//
// Accuracy takes each admitted or denied request at the midpoint of its [Lo, Hi], in time order,
// through an exact limiter with all of the contract's limits at once (the ideal), and reports
// efficiency (admitted / ideal admitted), false denials (denials that would have fitted on top of
// the algorithm's own admissions) and the worst window, MaxWindowRatio, over the run and per
// bin: the most permits the algorithm admitted in any sliding window (t−W, t], over L, for
// sliding-window and fixed-window alike (fixed-window may legitimately reach 2 across a window
// boundary; the figure shows it), for first-hit-window the most permits admitted in one of the
// first-hit windows that the algorithm's own requests opened (admitted or denied), over L, and
// for token-bucket the tokens drawn and not yet refilled over C. The ideal first-hit limiter
// opens a window at any request once the last one ended, whether it admits the request or
// not. Events before Log.From only prime the limiters (the ideal one and the algorithm's own).
// Unknown and failed requests are left out: accuracy is a description, not a verdict.
//
// Replay gives the decisions with an exact time (Lo == Hi, the time a script returned) to the
// algorithm's reference model in time order and counts those it decides otherwise (for a
// first-hit limiter, algorithms.NewFirstHitModel: denials open its windows too).
//
// # Pressure
//
// A pass means something only when the run pressed the contract: a limiter that never reached
// its limit keeps any contract. Accuracy measures the pressure (Pressure) on the algorithm's
// own decisions at the requests' midpoints, as it measures MaxWindowRatio, per limit and
// scope, over the measured part:
//
//   - windows: aligned windows [kW, (k+1)W) for sliding-window and fixed-window, the
//     first-hit windows the algorithm's own requests opened, and aligned refill periods
//     [kP, (k+1)P), P = RefillPer, for token-bucket; a window counts when it holds a decided
//     request;
//   - a window reaches its allowance when, at some request in it, the algorithm's own
//     admissions use the whole limit (MaxWindowRatio's use ≥ 1: L permits in the sliding
//     window (t−W, t], in the aligned or first-hit window, or an empty bucket), or the request
//     would not have fitted on top of them;
//   - a boundary is crossed under pressure when a window that reached its allowance is
//     followed by a window of the same scope that holds a request: the next aligned window or
//     refill period, or a first-hit window opened less than W after the last one ended.
//
// The contract was pressed when some window reached its allowance or some request was denied.
// Measurement.Sections makes a measurement that never pressed it inconclusive ("the contract
// was never pressed"), unless its scenario measures speed only (Measurement.SpeedOnly), which
// keeps the verdict and says that the contract was not exercised. Summary.Finding says that the
// contract held only on a pass that pressed it without a possible violation; otherwise it says
// what was found, or what could not be ruled out.
//
// # Streaming
//
// Stream checks a contract as a history's events arrive and reports at Finish exactly the
// Report Check gives on the same events: the same definite and possible violations, Chained,
// worst sets (Where included), listed violations and unknown-outcome excess. It is the same
// sweeps, kept from step to step. Its specification:
//
//   - Input. Events come through Add in any order, relative to the header's Base. Advance(t)
//     promises that no later event has Lo < t; the events below it are released, in reorder
//     bins of about a millisecond, and each limit takes them sorted by scope and Lo. An event
//     that comes below what was released is Late: left out and counted (a StreamLog counts it
//     in Dropped, so the verdict cannot pass; see JudgeWith).
//   - Order. With F the released frontier, every event of Lo < F has come, so an admission's
//     Hi is final once Hi < F (admissions wait in a heap by Hi until then), a group of equal Lo
//     is complete once its Lo < F, and an end b of a sweep is taken once every event that can
//     lie in its sets has come. Steps run when a few thousand events (16 per active scope) are
//     released, or the frontier moves a quarter of the widest window, refill period or
//     granularity.
//   - What is kept, per scope (K·W and widths as in the sections above). Sliding-window: the
//     admissions that a definite set ending at a later b can hold, those of lo > b + G − K·W,
//     and those a possible set can, not yet passed in Hi order (hi > b − W − G): about
//     K·W + 2G and the widest interval in flight. Fixed-window: the admissions of the open
//     aligned window and those meeting it. Token-bucket: startMax, whose settled starts
//     (every position before them added) are one number, fin, with the start that gave it (for
//     the worst set's Where), and a window of the positions whose intervals nest; possible sets
//     keep a running maximum, its start and the least lo of its set. First-hit-window: the
//     requests' union and P̂ as intervals, the chain's window being made (read off the union,
//     not the requests: when requests are dense u lags the windows by a drift that grows with
//     the run), clumps back to the least start (d) still values, and the admissions, denials
//     and failures behind P̂'s frontier; P̂ is final below a window's v + 1 once a sure request
//     W after it has come, so the conditions run about 2W behind the events. Unknown outcomes:
//     the sums of their permits. Nothing else is kept per event: the worst sets are described
//     when found, from what is kept; the listed violations are the MaxViolations first in
//     Check's order, kept in a heap. Stream.Retained counts the events held; a test holds a
//     steady load for 10 s and 40 s and requires the peak not to grow.
//   - Cost: the reorder bins, a radix sort per step and the sweeps; BenchmarkStream measures
//     events per CPU second.
//
// MeasurementStream is Measurement's counterpart: its Sections and BinLimits equal
// Measurement's on the same history, warmup, disruptions and faults. It checks the measured
// events as the history as one (and, for a first-hit-window limit, again with the warmup's
// events first, From at Start and Fresh, as Measurement.check), and runs accuracy, replay and
// the bin counts in mid order: an event waits until the frontier passes its midpoint, and
// sortByMid's order (total) decides ties. Accuracy keeps the ideal and the algorithm's meters
// per scope (the windows' admissions) and one bin of its series per second of the run; a bin
// counter per width given in StreamSettings.BinWidths keeps, per scope, the last bin it counted
// in. Epochs and faults:
//
//   - With StreamSettings.Disruptions, the epochs between losses of the state are checked as
//     the events come, beside the history as one (so the checking doubles). An event goes to its
//     epoch (as Split, or SplitAll with a first-hit-window limit) once AdvanceCuts promises
//     that no disruption or fault that begins before its Hi will still be reported: that is
//     the bounded delay, the node watch's polling; and not before the promise passes Start, for
//     a promotion whose former master steps down before Start leaves no cut. A loss reported
//     after the promise passed it is late: it cannot cut what is already in epochs, and makes
//     the verdict inconclusive with a reason that says so; so does a loss without Disruptions.
//   - Fault must come before the promise (without Disruptions, Advance) passes the fault's
//     Hi: the first decision after it is followed as the events come. The unknown and failed
//     outcomes, which the fault figures count at the end and which first-hit epochs copy into
//     every later epoch, are kept, the first spillMem in memory and the others in a temporary
//     file (Spilled counts them): the one thing that grows with a long run full of errors,
//     on disk rather than in the heap.
//
// StreamLog is the aggregator (load.Aggregator) that feeds a MeasurementStream during a run.
// The worker shards' StreamLogs (made with Fresh) share a core; a shard converts outcomes as
// AdmissionLog does and hands over batches; the core's goroutine feeds the stream and advances
// it to a watermark: the latest receive time seen, less StreamLogSettings.Horizon (the longest a
// request may be in flight) and a second for a shard to hand an outcome over, on the log's clock
// (less a decision's slack and the server's offset), and never past an event a shard holds or
// handed over; or the caller's own (Advance). To use it in place of an AdmissionLog:
//
//	sl := verify.NewStreamLog(start, sharedClock, server, clientClock, verify.StreamLogSettings{
//		Measurement: verify.Measurement{Contract: c, Model: m, Fresh: fresh, SpeedOnly: speedOnly},
//		Warmup: plan.Warmup, Subjects: plan.Keys.Names(), Clients: clientNames,
//		Stream: verify.StreamSettings{Disruptions: watched, BinWidths: []time.Duration{k * bin}},
//		Horizon: requestTimeout,
//	})
//	defer sl.Close()
//	res, err := load.Run(ctx, client, limiter, plan, load.Sinks{
//		Measured: []load.Aggregator{sl}, Warmup: []load.Aggregator{sl.Warmup()}})
//	// during the run: sl.Disrupt(d) and sl.AdvanceCuts(t) from the node watch, sl.Fault(f)
//	// once an injected fault is over
//	v, acc := sl.Sections(warnings) // warnings from res.Counts, Late events in Dropped
//	limits := sl.BinLimits(k*bin, n)
//
// With StreamLogSettings.Record it also writes every event to a temporary file and encodes as
// an AdmissionLog (MarshalBinary, WriteTo).
//
// A segment of a segmented run writes its admission logs as sorted log files
// (AdmissionLog.WriteSorted: the events in time order, delta-coded and gzip-compressed), and the
// merge of segments reads them back with LogReader, merged by time (a k-way merge by Lo), into
// one MeasurementStream, advanced behind the merge: its memory, too, follows the contract's
// windows, not the run's length.
//
// # Cost
//
// Check moves the admissions to the front of log.Events (and the unknown outcomes after them)
// and works on them in place: it never copies the log, whose denials and failures it skips. It
// sorts them by scope and time (an in-place radix sort on a 64-bit key, the scope above the
// packed times shifted right as far as it takes to fit: a few O(n) passes of up to 9 bits; no
// sort for a limit with the scope of the one before; per-client after per-subject only orders
// each subject's run by client, with a counting sort through a buffer of up to 64 KiB) and
// sweeps each scope once (except a scope with at most L permits in all, or C for token-bucket:
// no set of its admissions can exceed its allowance): sliding-window and fixed-window with two
// pointers; token-bucket's possible violations with two running sums, and its definite ones
// with a running maximum where no interval nests inside an earlier one and, where some do, a
// segment tree over a window of the positions not yet settled (O(log w) per admission, w the
// window's width: a few hundred when intervals nest only among neighbours). When intervals
// nest, the Hi order is found by insertion sort from the Lo order (a comparison sort past
// n·log2(n) moves). The log holds 16 bytes per event, denials included (Accuracy and Replay
// need them). Check adds buffers allocated at the size of the largest scope, and only when its
// intervals nest: 4 bytes per admission for the Hi order, and for token-bucket a bit per
// admission and a tree of 32 to 64 bytes per position of the widest window (of the whole scope
// when it checks what unknown outcomes could hide).
// bench/verify_test.go measures both. A first-hit-window limit is checked after the others: it
// sorts the unknown outcomes and the denied and failed requests by scope too, and sweeps each
// scope of more than L admitted permits a few times in O(n) (n its requests), after (b)'s
// token-bucket sweep, and (d)'s, the same sweep with the clumps' counts for values (a binary
// search per admission); it adds two bits per admission, 16 bytes per interval of the
// requests' union and of P̂, 24 bytes per window of the chain and 16 per clump, for the
// largest scope. Check,
// Accuracy and Replay reorder log.Events; do not call them concurrently on one Log.
package verify
