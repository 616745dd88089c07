// Package ci turns limitbench's results into what CI systems read, so that a run, a merge, a gate
// or a hunt drops into any CI in one step: JUnit XML for test reporters, OpenMetrics text for
// GitLab's merge-request metrics widget, and, on GitHub Actions, the job's step summary, error
// annotations at the scenario line that defines what failed, and the few REST calls the
// limitbench action makes (the baseline artifact of the default branch, one pull-request
// comment). The action itself (action.yml) and the GitLab template (ci/gitlab) live beside it;
// `limitbench ci` wires them to run and gate. The gate's history formats (Bencher's BMF,
// github-action-benchmark's JSON) are package gate's own.
//
// # JUnit
//
// A report is <testsuites> holding one <testsuite> per algorithm × topology, whose <properties>
// carry that entry's key figures, and one <testcase> per verdict: per entry of a result (RunSuites),
// per row of a gate report (GateSuites), per hunted algorithm × topology (HuntSuites). The figures
// sit on the suite because the Jenkins/Ant form allows properties there only (ci/testdata/junit.xsd
// is that form; the tests validate every report against it with xmllint). A testcase's outcome:
//
//	result entry   pass: passed; expected violation caught, fail (tolerated), or no contract to
//	               verify: skipped; fail or expected violation missed: failure; inconclusive
//	               (with a contract) or no verdict: error. The reference script is not a test. An
//	               algorithm the scenario expects to be flagged that was not run (the run was not
//	               cut short) is a failure of its own.
//	gate row       a row that fails the gate (a regression; an inconclusive row under
//	               --fail-inconclusive): failure; another inconclusive row: skipped (it cannot
//	               rule out a regression); improvement, insignificant, ok: passed.
//	hunt target    a violation the scenario does not expect: failure; an expected one: skipped;
//	               no violation of an algorithm listed under expect.violations: failure; else
//	               passed.
//
// The message of a failure, error or skip is its finding in one line; its text, the findings in
// words (report.Findings for an entry, the row's interval and detectable change for the gate).
//
// # OpenMetrics
//
// Metrics holds one gauge per figure and algorithm × topology of the results added to it
// (AddResult), labelled scenario, algorithm and topology, in base units: throughput (decisions per second), p99 latency from the intended
// send time (seconds), Redis CPU per decision (seconds), memory per limited subject (bytes),
// efficiency (admitted over ideal) and definite violations; a figure the entry did not measure
// is left out, never written as 0. The reference script is left out. AddGate adds the gate's
// rows by verdict, AddHunt a hunt's best score, trials and whether it found a violation. GitLab
// compares each series with the target branch's as text, so values are rounded to six
// significant digits.
//
// # GitHub Actions
//
// When GITHUB_ACTIONS=true the commands append their summary Markdown to $GITHUB_STEP_SUMMARY
// (AppendSummary, cut to stay under GitHub's 1 MiB a step, and saying so), and print an
// ::error annotation for each definite violation, broken threshold, missed expected violation,
// gate row that fails the gate and unexpected hunt violation, at the line of the scenario file
// that defines the algorithm (its algorithms entry, or the expect.violations entry for a missed
// one) or the threshold (Places). GitHub shows 10 error annotations a step: an Annotator prints at
// most 10 and then one warning that says how many more there were.
package ci
