// Package result is the result.json schema (limitbench/result/v1) as a leaf: the types a run's
// result.json holds (Result, its Scenario and Settings, Environment, one Entry per algorithm ×
// topology with its Server, Timeline, Samples, Relative figures, Warnings and Files, and, for a
// segmented run, Segment, Partial and Generator), reading and writing it (Read, Result.Write,
// the admission logs beside a segment's result), the histogram encoding, and the pure functions
// on those values that the commands share: NewEntry (an entry from load's figures), MergeRepeats,
// Result.Relate, Entry.Label. Metric is the one vocabulary of an entry's figures: a scenario's
// thresholds, a capacity objective and the gate name their figures with it, and a metric reads
// its figure from an entry or a repeat's Sample.
//
// The schema embeds each concept in its owner's type rather than a copy: the scenario's keys,
// skew and client mode (internal/load), limit, custom scripts and WAIT (algorithms), arrival
// profile (internal/arrival), latency summaries, error classes and timeline counts
// (internal/load), the verification and accuracy sections (verify) and the node watch's
// record (internal/faults/watch). Expect, the scenario's expectations, is declared here, the
// lowest package that needs it; package scenarios loads the YAML straight into it.
//
// # The scenario, described once
//
// result.json's scenario section describes the scenario once, structured: its name,
// description, file, seed and topologies, and settings (Settings: limit, cost, warmup, duration,
// clients and client mode, arrival profile, keys, clock skew, algorithms and custom scripts,
// expectations, thresholds, persistence, faults, WAIT). The reports put it in words from that
// alone. Results written before this version also described it in words beside settings
// (scenario.loop, mode, arrival, keys and skew as text, and duration_s, clients, algorithms and
// expect_violations); Read ignores those fields, whose meaning settings carry, so report, gate and
// merge read such results as before, and writing one again drops them (TestReadPreviousVersion).
// Every other field keeps its name, unit and meaning.
//
// # Leaf
//
// Leaf means that it imports only those owners' value types: nothing that renders (package
// report), starts or captures an environment (internal/redisenv, internal/cpus, internal/faults'
// proxies) or loads scenarios. So gate, report, capacity, hunt and merge read results without
// linking testcontainers, moby or toxiproxy; TestLeaf holds it to that. Capturing the
// environment (report.HarnessEnvironment, report.AddTarget) and describing a scenario are done
// by the code that owns what is described.
package result
