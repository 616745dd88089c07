// Package trace owns the trace: an explicit schedule of requests (rows of offset, client,
// subject and cost, and each client's clock offset), its validity, and its two file formats,
// CSV and JSON Lines. It reads a trace file strictly, reporting every problem at once with its
// file, line, column and field (Read, Parse: a *Errors of problem.Problem), and writes a trace
// so that reading it back gives the same trace (Write, Trace.WriteCSV, Trace.WriteJSONL).
//
// Who uses a trace: a scenario's arrival.trace names a trace file (package scenarios reads it
// here), limitbench hunt writes its reproducers as traces, and package load replays one as a
// load (load.TracePacer, load.Replay: each row sent at its own offset, as its own client). This
// package knows nothing of a run: it imports neither load nor scenarios, so both may import it.
package trace
