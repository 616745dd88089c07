// Package segment owns the segments of a segmented run (`limitbench run --segment I/N`, merged
// by `limitbench merge`): one generator's deterministic share of a run (Segment), how its
// measurements meet the other generators and record on the server's clock (Segment.Stage, a
// measure.Stage), and the merge of the segments' partial results into the result one
// unsegmented run would have given (Merge). "Segment" means this and nothing else; a part of an
// arrival profile is a piece (load.Piece).
//
// Where the types live, and why. Segment is the one type for a generator's share: its index and
// count, its run id, its start and lead, its test clock offset. The load generator needs only
// which ticks and clients are the segment's, so package load declares that as an interface
// (load.Share) which Segment implements: load is below this package (the merge decodes load's
// aggregators), so the type cannot live there without splitting it in two. What a result.json
// records of a segment (result.Segment, result.Partial, result.Generator) is the result schema's,
// in the leaf package result, so that report, gate and merge read it without linking this
// package; the logic that fills and reads those records is here.
//
// The segments of a run share their key prefixes (limitbench:<run id>:...): none claims them, the
// barrier keys live under them (prefix + "start", "arrived", "done"), and the last generator to
// leave a measurement removes its keys. Every generator records decision times on the server's
// clock (its measured offset, the offset's error in each interval), so that the merged history
// is on one clock; Merge checks that the parts are every segment of one run, each once, merges
// every aggregator exactly and verifies the merged history as one. A segment writes its
// admission logs sorted by time and compressed (verify.AdmissionLog.WriteSorted); Merge reads
// them as streams, merges them by time (a k-way merge by the events' Lo) and feeds the streaming
// checker a run uses (verify.MeasurementStream), so that its memory follows the contract's
// windows and the number of segments, not the run's length.
package segment
