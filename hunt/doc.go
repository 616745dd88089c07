// Package hunt searches for the schedule that makes a rate limiter break its contract, the way
// property-based testing searches for the input that breaks a function: it generates candidate
// schedules aimed at the contract's weak points, runs each as a short trial, keeps the ones that
// came closest to a violation and mutates them, and when one breaks the contract shrinks it to a
// small schedule that still does.
//
// It is the whole of `limitbench hunt` but the flags, as gate/ is the whole of the gate: the
// schedule families, the search (Hunt), the shrinker (Shrink), the running of a scenario's hunt
// (NewPlan, Plan.Run: an environment per topology, the targets in turn, the shrink and confirm
// policy, the reproducer scenarios), the schema of hunt.json (File), the verdict against the
// scenario's expectations (Verdict), and the report (Figures, WriteMarkdown, WriteHTML,
// WriteReport, WriteSummary). It measures nothing itself: a trial is a function it is given
// (Trial for Hunt, Lab.Trial for Plan.Run), so the same search drives a real limiter on Redis
// through the harness, or a pure-Go reference model in tests.
//
// # Schedules
//
// A schedule is a trace.Trace: rows of offset, client, subject and cost (and each client's clock
// offset), replayed exactly. Every schedule of one hunt starts at the same phase of the Unix
// clock, its Frame (an arrival.Align): time zero lies Lead before a multiple of the contract's
// period (the fixed window, the clock's granularity, or the refill period), so a family that aims
// a burst at a boundary knows where the boundaries fall, and a reproducer scenario replays it at
// the same phase.
//
// # Families
//
// A Family is a pure function of (Target, Bounds, seed) to a trace: the same arguments give the
// same schedule. Families are chosen by the contract's kind and by what the algorithm declares
// (Target: its clock, whether it takes costs, the clock offsets clients may have). Each aims at
// a weak point (see Families for the list):
//
//   - window-boundary: the allowance spent just before a window boundary and again just after it
//     (epoch-aligned fixed windows, whole seconds of a coarse clock); with client clocks, the two
//     bursts come from clients whose clocks put them on either side of the boundary.
//   - refill-point: a drained token bucket probed at and around the instants it refills, relative
//     to the drain and to the epoch (a bucket that refills in whole intervals).
//   - anchored: one request creates the limiter's state; whole periods later (a refill period,
//     a window, a few permits' refill time, counted from that first request, not from the
//     epoch) the allowance is spent just before the instant and again just after it (a bucket
//     that adds R tokens every P from its first request gives C + R).
//   - key-expiry: a window filled from its first request, then requests every few hundred µs
//     across the millisecond its key expires in (Redis keeps a key through that millisecond,
//     with PTTL 0), and the allowance again right after.
//   - after-drain: steady overload, then bursts right after the limiter drained.
//   - skewed-newcomer: clients whose clocks are off first appear just after a drain.
//   - skew-alternation: clients ahead and behind take turns, so a limiter that stores the
//     caller's time is rewound and refilled again.
//   - spike: many clients at one instant (a race between reading and writing the state).
//   - first-hit: a first request opens a window, the allowance is spent at its end and again
//     right after it (a window that starts at the first hit, held to a sliding contract; and the
//     edges of first-hit-window contracts).
//   - overshoot (algorithms that take costs): within one period, requests of a cost the
//     allowance is not a multiple of, from new clients, so a count checked only for equality
//     with the limit (`==`) steps over it in whatever order they run and never meets it again.
//   - poisson, on-off: seeded random arrivals at rates around the limit.
//
// # Faults and clock jumps
//
// With Bounds.Faults, a schedule also places faults (trace.Fault: restart, evict, failover,
// pause, blackhole, flush-scripts, client-kill on the master; scenarios.NemesisKinds) and jumps
// of its clients' clocks (trace.Jump, kind ClockJump, to another offset Target.Skews allows),
// at most MaxFaults of each, aimed as bursts are: at a period boundary, a period counted from
// the first request, or within a burst. Family.Make adds one to a schedule one time in two, and
// mutations add, move and remove them; without Bounds.Faults none of this draws a number, so a
// hunt without faults explores what it always did. The Trial carries out a schedule's faults
// (measure.Trials runs a schedule with faults alone, with the Faults stage) and its clock jumps
// (the load sends each row with its client's offset then).
//
// A trial is judged between the losses of the limiter's state it saw (verify.Cuts of its
// Disruptions: a restart, failover or eviction, injected or not): the score is the best
// approach within one epoch (verify.Split), so a violation is the algorithm's only when no loss
// lies inside it, as `limitbench run` judges a run with faults, and a correct limiter is never
// charged with what a loss let through. That is measured apart: each fault's report
// (verify.FaultReport, from verify.Measurement.Sections) and their excess summed, the permits
// the faults cost (Candidate.Cost); the schedule that cost the most is Result.Costliest,
// hunt.json's fault_cost. Among candidates of one score, those whose faults cost more rank
// first, so the search also steers towards the costliest placements. A clock jump loses no state: the contract holds in real time, so what
// a jump provokes is the algorithm's (it trusted the caller's clock).
//
// Shrinking removes faults and jumps first (each costs one replay), then rounds their times with
// the rows'; Size counts them after the rows. A reproducer scenario lists the faults it keeps
// under faults: (with the duration they need), and its trace file carries the jumps (a client's
// skew that changes between its rows).
//
// # Objective
//
// A trial's admission log is scored by verify.ApproachOf (within each epoch, above): the largest
// ratio of permits admitted to permits allowed over the windows or intervals of the contract
// that hold for every placement of the decision times. A score above 1 is a definite violation (exactly what
// verify.Check reports), and below 1 it ranks schedules by how close they came.
//
// # Search
//
// Hunt first tries two schedules of each family, then, trial after trial, either mutates one of
// the best candidates kept (Budget.Keep, a tournament between two picked at random favouring
// the better) or, one time in five, asks a family for a fresh schedule. A mutation shifts or
// scales times, moves a burst to a boundary, adds or drops requests and clients, gives a burst
// to another or a new client (with another clock offset), or changes costs. A schedule already
// tried is never run again. Every choice comes from one generator seeded by Config.Seed, so two
// hunts that observe the same scores explore the same candidates (with a deterministic Trial, the
// whole hunt repeats exactly). The search stops at the first definite violation, after
// Budget.Trials trials, when Budget.Time has passed (measured with Config.Now), or when its
// context is canceled; it then returns what it found so far.
//
// # hunt.json
//
// File is hunt.json: per algorithm and topology (Entry, NewEntry), the trials, the best score and
// its schedule, the violation, its worst window and its reproducer, or the closest approach, and
// a Plot of the best schedule's trial: the permits requested and admitted per time bin and the
// set of admissions the verifier marked, all taken from that trial's own admission log (the best
// candidates keep theirs, Candidate.Log), never from a model. It is built from the types that
// own each concept: an entry's align is the arrival.Align its schedules ran at, its closest
// approach verify's Closest and its worst window verify's Where (each with its limit written
// out), its confirmation a Confirmation. Figures, WriteMarkdown and WriteHTML draw and write the
// report from a File alone, with package report's plotting and formatting.
//
// # Running a scenario's hunt
//
// NewPlan checks Options and resolves the scenario's algorithms before anything starts (bad input
// first); Plan.Run starts the scenario's environment for each topology in turn, checks custom
// scripts, hunts each algorithm with a contract, stops the environment, and returns an Outcome:
// the File and the traces and reproducer scenarios its entries name, which Outcome.Write puts
// in the results directory with the report. Shrinking keeps a candidate only when it breaks the
// contract definitely, by however little, in each of ShrinkReplays replays, and the reproducer
// must then break it in ConfirmReplays more. A reproducer scenario replays the shrunk trace at the hunt's
// frame (arrival.align) with as many clients as a trial used (Lab.Workers), and names a custom
// script relative to the results directory.
//
// Plan.Run takes the harness's functions as a Lab (cmd/limitbench passes internal/measure's:
// trials run through measure.Trials, as DESIGN.md has it), so hunt depends on no way of
// measuring.
//
// # Shrinking
//
// Shrink takes a violating trace and a predicate that replays a trace and says whether it still
// violates, and returns a smaller trace that does, in a total order of sizes (Size: rows, then
// clients, subjects, extent in time, permits, clock offsets, and how round the offsets are). Its
// passes, repeated until none makes progress: delete chunks of rows (halves, quarters, ...,
// pairs), delete a client's or a subject's rows, merge a client into another (one with the same
// clock offset first) and a subject into another, lower costs to 1, move clock offsets to allowed ones of smaller magnitude (0
// first), pull rows across a gap together, round every offset to a coarser grid, and delete
// single rows. It never tries a candidate twice and never one that is not smaller, so it ends;
// it is deterministic given the predicate's answers; and it is bounded by a number of predicate
// calls and a deadline. The predicate answers how many replays of a trace broke the contract
// (Answer): a trace is kept only when all did (however small the excess: one permit over is a
// violation), and the result is called 1-minimal for row deletion (ShrinkResult.Minimal) only
// when shrinking ended because no pass made progress and every deletion of one row was asked
// about and broke the contract in none of its replays; a deletion that broke it in some replays
// but not all leaves the claim unmade.
//
// # Corpus
//
// A corpus is a directory of reproducers kept across hunts, as Hypothesis' example database
// and rapid's fail files keep failing examples (LoadCorpus says what an entry is). With
// Options.Corpus, Plan.Run gives each search the entries of its algorithm saved with the
// scenario's limit at the hunt's frame (Config.Corpus): Hunt runs them first, every one
// whatever the budget, so a flaw that came back is found at once and shrunk again; then it
// searches as without them. Each new reproducer is saved there (Outcome.Corpus,
// CorpusFiles.Write) as a scenario that expects the contract to hold, so that `limitbench run`
// of the corpus's scenarios fails in CI while any of them still breaks its contract.
//
// # Waiting for the frame
//
// Every trial starts at the hunt's frame, so a batch waits up to one period for it (a minute for
// minute windows). Progress says so before such a wait (Progress.Waiting) and counts the time
// waited (Progress.Waited, Result.Waited, hunt.json's waited_s).
package hunt
