// Package measure owns one measurement: one algorithm on one target under one load. It is the
// only code that claims a key prefix, prepares a limiter, measures the server's clock offset,
// runs a load (load.Run), verifies what the load recorded and releases the prefix; every driver
// goes through Do: each measurement of `limitbench run` (internal/runner), each step of a
// capacity sweep and its memory step (capacity), each hunt trial (Trials) and each segment of a
// segmented run (internal/segment's stage). What a driver adds is a Stage it passes in, never a
// branch inside Do.
//
// # The lifecycle
//
// Do(ctx, spec, stages...) carries out these steps in order. A step that fails ends the
// measurement with an error; step 14 is then carried out all the same (from step 1's success on).
//
//  1. Claim. The key prefix (Spec.Prefix, KeyPrefix) must hold no key on any master (SCAN), so
//     that every key under it afterwards is the measurement's and may be removed; a prefix in
//     use is an error (ErrRedis) and nothing is written. A stage with Leave shares the prefix
//     with other generators instead (a segment): it is not claimed.
//  2. Watch. The node watch (faults.Watcher) starts polling every node (run id, role,
//     replication offset, disruptive commands), so that a restart, a failover or a flush from
//     now on is seen.
//  3. Set up. The stages' Setup: a segment gives the plan its share and puts the decision times
//     on the server's clock (OneClock); a fault schedule puts proxies in front of the nodes and
//     gives the load's client their Dialer.
//  4. Prepare. The algorithm is prepared on the prefix (Algorithm.Prepare: scripts or function
//     libraries loaded on every master) in the context the stages give (PrepareContext: call
//     mode fcall), and its contract is computed. A custom script Redis rejects is ErrBadScript,
//     naming the scenario's file, line and field. The timeline's bin is chosen (load.BinFor)
//     from the plan's duration and the contract's windows (Windows) with Spec.Windows.
//  5. Clock. Unless the server reads the harness's clock (Target.Info.SharedClock, and no
//     OneClock), its offset is measured (clock.Measure) and its error widened by Drift(span):
//     100 ppm of the load's span, warmup included, plus a minute. This is the one rule for the
//     drift, whatever the driver. The aggregators (Recording) are made on the clock the decision
//     times will be on, with the streaming verifier among them unless the measurement keeps its
//     whole history (Measurement.WholeHistory: hunt trials, fault schedules, segments).
//  6. Begin. The stages' Begin (the server's figures before the load; a segment's shifted
//     clock wraps the limiter and the sinks); then the node watch's first poll of every node
//     (at most 2 s).
//  7. Meet. The stages' Meet decide when the load starts: a segment at the barrier in Redis or
//     at its start time, a batch of hunt trials together, a scenario's aligned start.
//  8. Load. load.Run sends the plan with the measurement's own client (closed when the load
//     ends), every outcome seen by the stages' Observe and then by a guard (faults.Guard) that
//     stops the load when Redis is lost or refuses a permission; a stage's Observe may excuse
//     outcomes while Redis is unreachable on purpose. The stages' Start is called when the
//     load's clock starts (load.Plan.OnStart: once its connections are open, before the first
//     tick), with when the measured part begins.
//  9. End. The stages' End (a fault schedule's injector stops, and replication is waited for to
//     settle). An error of load.Run (a plan it refused) ends the measurement here.
//  10. Verify. The node watch stops; what the verifier is given (verify.Measurement) is the
//     recorded logs (the stream has verified the admissions as they came; the logs hold the
//     whole history only within KeepEvents, see Recording), whether the prefix was fresh (a custom script's empty key may hold state
//     from before), the watch's events as disruptions, the stages' additions (Verify: fault
//     windows) and why the guard stopped the load.
//  11. Report. The entry (result.Entry): load's figures, the verifier's sections, the timeline
//     with the contract's limit per bin, a custom script's notes, the call mode (evalsha unless
//     a stage says fcall), the watch's summary, and the stages' additions (Report: a segment's
//     partial result, faults' NOSCRIPT counts).
//  12. Check. A load the guard stopped ends the measurement with ErrPermission (a NOPERM reply)
//     or ErrLost; so does a Redis that no longer answers a PING. The entry is kept.
//  13. Finish. The stages' Finish, once Redis answers: the server's cost (Cost: commandstats,
//     CPU, memory, the keys under the prefix), all within FinishTimeout. A ctx that ended is
//     then ErrInterrupted, the entry kept.
//  14. Release. The stages' Release, last first (function libraries deleted, proxies closed);
//     then the keys under the prefix are removed when they are the measurement's (claimed, or
//     shared and this generator the last to Leave). On an external Redis, keys that could not be
//     removed are a warning (result.WarningKeysLeft) saying how many, where, why and how to
//     remove them; Measurement.Warn puts it in the entry, or through Spec.Logf when there is
//     none.
//
// # Errors
//
// Every error Do returns matches one of ErrLost, ErrInterrupted, ErrBadScript, ErrPermission and
// ErrRedis, or redisenv's ErrUnavailable and ErrBadConfig, or algorithms.ErrUnknownAlgorithm:
// Mark marks an error that matches none as ErrRedis. cmd/limitbench's exit-code table maps them.
//
// # What lands on these seams next
//
// A stage is the seam for what observes or changes a measurement: live metrics (issue 32) are a
// stage whose Observe counts outcomes and whose Report closes its series; a streaming verifier
// (issue 30) is one more aggregator in the Recording (it is: Recording.Stream); eviction seen by the node watch (issue
// 28.1) is one more kind of event that step 10 turns into a disruption; function libraries that
// are never replaced or deleted unless this run loaded them (issue 28.3) are the Functions
// stage's decision; a generator that dies (issue 28.14) is the segment stage's Leave and Meet.
//
// # Where things live
//
// The stages a driver needs are here (Functions, Cost, Faults, Align, Checkpoints; Trials
// builds its own), except the segment's, which lives with the merge of partial results in
// internal/segment. The fault injector itself is internal/faults'; this package turns what it
// did into the verifier's windows. Resolve and CheckScripts turn a scenario's algorithm entries into
// algorithms, so that a custom script's failure to load is located in its scenario file.
package measure
