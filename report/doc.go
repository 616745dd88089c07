// Package report renders what a run leaves behind from the result schema (package result): the
// HdrHistogram percentile-distribution files (.hgrm), the gonum plots (latency "nines", accuracy
// over time, side-by-side comparison), the Markdown and self-contained HTML reports and the
// summary table, the run-against-run comparison of saved results, the report of a hunt (hunt.go:
// its figures, report.md and report.html, from hunt.json alone), and the one file of number and
// unit formatting every report uses (format.go). WriteAll writes them all beside result.json.
//
// It also captures the environment a result records (HarnessEnvironment, AddTarget: this
// machine, the CPU policy in effect and the Redis a run started), which the leaf result package
// must not do.
//
// `limitbench report` reads result.json files back with result.Read and rebuilds everything from
// them alone, so a Result carries every figure the plots and reports need (encoded histograms,
// timeline bins, violation times), not only the summary numbers.
package report
