// Package report renders what a run leaves behind from the result schema (package result): the
// HdrHistogram percentile-distribution files (.hgrm), the gonum plots (latency "nines", each
// algorithm against its contract's own allowance over time, side-by-side comparison), the
// Markdown and self-contained HTML reports, the run-against-run comparison of saved results, the
// terminal's tables (the run's summary, Table and Paragraph for 120 columns) and the one file of
// number and unit formatting every report uses (format.go). WriteAll writes them all beside
// result.json. Feature packages render their own reports with its exported pieces (NewPlot,
// NewLegend, RenderFigure, PageHead, FigureView and the formatting): a hunt's is package hunt's.
//
// The reports open with a decision summary: which algorithm to pick on the run's workload by a
// stated rule (Recommend, RuleText), then why every entry that needs it got its verdict (Why),
// then a violation explorer per entry with an excerpt of its admission log (report.html draws it
// with an inline script from inline JSON: the file fetches nothing), then, collapsed, fairness,
// scenario, environment, verdicts, findings and plots.
//
// It also captures the environment a result records (HarnessEnvironment, AddTarget: this
// machine, the CPU policy in effect and the Redis a run started), which the leaf result package
// must not do.
//
// `limitbench report` reads result.json files back with result.Read and rebuilds everything from
// them alone, so a Result carries every figure the plots and reports need (encoded histograms,
// timeline bins, violation times), not only the summary numbers.
package report
