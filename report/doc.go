// Package report renders what a run leaves behind from the result schema (package result): the
// HdrHistogram percentile-distribution files (.hgrm), the gonum plots (latency "nines", accuracy
// over time, side-by-side comparison), the Markdown and self-contained HTML reports and the
// summary table, the run-against-run comparison of saved results, and the one file of number and
// unit formatting every report uses (format.go). WriteAll writes them all beside result.json.
// Feature packages render their own reports with its exported pieces (NewPlot, NewLegend,
// RenderFigure, PageHead, FigureView and the formatting): a hunt's is package hunt's.
//
// It also captures the environment a result records (HarnessEnvironment, AddTarget: this
// machine, the CPU policy in effect and the Redis a run started), which the leaf result package
// must not do.
//
// `limitbench report` reads result.json files back with result.Read and rebuilds everything from
// them alone, so a Result carries every figure the plots and reports need (encoded histograms,
// timeline bins, violation times), not only the summary numbers.
package report
