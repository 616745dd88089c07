// Package report owns what a run leaves behind: the result.json schema (limitbench/result/v1) and
// its reading and writing, the HdrHistogram percentile-distribution files (.hgrm), the gonum plots
// (latency "nines", accuracy over time, side-by-side comparison), the Markdown and self-contained
// HTML reports and the summary table, the run-against-run comparison of saved results, the report
// of a hunt (hunt.go: its figures, report.md and report.html, from hunt.json alone), and the one
// file of number and unit formatting every report uses (format.go).
//
// The schema embeds each concept in its owner's type rather than a copy: the scenario's keys,
// skew and client mode (load), limit and custom scripts (algorithms), arrival and expectations
// (scenarios), latency summaries and timeline counts (load), the verification and accuracy
// sections (verify). Report assembles an entry from them (NewEntry, DescribeScenario,
// HarnessEnvironment), merges repeats and relates entries to the reference script.
//
// `limitbench report` reads result.json files back with ReadResult and rebuilds everything from
// them alone, so a Result carries every figure the plots and reports need (encoded histograms,
// timeline bins, violation times), not only the summary numbers.
package report
