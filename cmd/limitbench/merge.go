package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/limitbench/limitbench/internal/segment"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
)

func init() {
	register("merge", "merge the partial results of a segmented run into one verified result", runMerge)
}

// runMerge implements `limitbench merge [--out DIR] [--force] [--junit FILE] [--metrics-report FILE] DIR...`: each DIR (or its
// result.json) is one segment's partial result of `limitbench run --segment I/N`. It checks they
// are segments of one run, each once (segment.ErrNotOneRun is bad input, exit 2, naming the
// directories and segments), merges and verifies them as one history (segment.Merge; without some
// segments, a partial merge that warns and names them, where no pass is claimed), writes
// result.json, the .hgrm files, plots and reports into DIR (default a new
// results/<scenario>-merged-<UTC time>/), and exits 1 when the merged run failed its verdicts,
// expectations or thresholds.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", "[--out DIR] [--force] [--junit FILE] [--metrics-report FILE] DIR...", stderr)
	out := fs.String("out", "", "directory to write the merged result to (default a new results/<scenario>-merged-<UTC time>/); refused when it holds a result, unless --force")
	force := fs.Bool("force", false, forceUsage)
	var cf ciFlags
	cf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return badInput(errors.New("no partial result given: name each segment's results directory"))
	}
	var parts []segment.Part
	for _, arg := range fs.Args() {
		dir, path := arg, filepath.Join(arg, result.FileName)
		if st, err := os.Stat(arg); err == nil && !st.IsDir() {
			dir, path = filepath.Dir(arg), arg
		}
		r, err := result.Read(path)
		if err != nil {
			return badInput(err) // result.Read's errors name the file
		}
		if err := result.CheckPartialLogs(dir, r); err != nil { // read one at a time by the merge
			return badInput(fmt.Errorf("%s: %w", dir, err))
		}
		parts = append(parts, segment.Part{Dir: dir, Result: r})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	res, failures, err := segment.Merge(parts)
	if err != nil {
		return badInput(err)
	}
	var o *outDir
	if *out == "" {
		o, err = newOutDir("results", res.Scenario.Name+"-merged-"+timeStamp(time.Now()))
	} else {
		o, err = explicitOutDir("--out", *out, result.FileName, *force, stderr)
	}
	if err != nil {
		return err
	}
	defer o.release()
	if err := report.WriteAll(o.path, res); err != nil {
		return fmt.Errorf("write the merged result to %s: %w", o.path, err)
	}
	if len(res.MissingSegments) > 0 {
		fmt.Fprintf(stderr, "warning: merged without segment(s) %s, which did not finish: their requests are in no figure; "+
			"a definite violation found without them stays definite where missing admissions can only add to it, and every pass is inconclusive\n",
			strings.Join(res.MissingSegments, ", "))
	}
	_ = report.WriteSummary(stdout, res) // stdout: a failed write has nowhere to be reported
	fmt.Fprintf(stdout, "merged %d of %d segments: %s\n", len(parts), len(parts)+len(res.MissingSegments), o.path)
	outs := newCIOutputs(ctx, cf)
	err = outs.addResult(res, o.path, outs.placesOfFile(res.Scenario.File))
	if ferr := outs.finish(stdout); err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("write CI outputs: %w", err)
	}
	if len(failures) > 0 {
		return failed(fmt.Errorf("%d problem(s):\n  %s", len(failures), strings.Join(failures, "\n  ")))
	}
	return nil
}
