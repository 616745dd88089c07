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

// runMerge implements `limitbench merge [--out DIR] [--force] [--junit FILE] [--metrics-report FILE] [--shard I/K] DIR...`
// and `limitbench merge --join [--out DIR] [--force] [--junit FILE] [--metrics-report FILE] DIR...`.
//
// Without --join, each DIR (or its result.json) is one segment's partial result of `limitbench
// run --segment I/N`. It checks they are segments of one run, each once (segment.ErrNotOneRun is
// bad input, exit 2, naming the directories and segments), merges and verifies them as one
// history (segment.Merge, which streams the segments' logs, merged by time, through the
// streaming checker; without some segments, a partial merge that warns and names them, where no
// pass is claimed), writes result.json, the .hgrm files, plots and reports into DIR (default a
// new results/<scenario>-merged-<UTC time>/), and exits 1 when the merged run failed its
// verdicts, expectations or thresholds.
//
// With --shard I/K it verifies only the subjects (or clients) whose name's FNV-1a hash falls in
// shard I of K (segment.MergeShard), writes that shard's result (default
// results/<scenario>-merged-shard-I-of-K-<UTC time>/) and exits 0 whatever it found: the shards
// are judged together, by `merge --join` of the K shard directories (segment.Join), which
// writes the merged result and exits as a merge does. A --shard that is not I/K with 0 <= I < K,
// --shard with --join, or --junit or --metrics-report with --shard (they report the joined
// result) are bad input, exit 2, as are --join directories that are not every shard of one
// merge once (segment.ErrNotOneMerge).
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", "[--out DIR] [--force] [--junit FILE] [--metrics-report FILE] [--shard I/K | --join] DIR...", stderr)
	out := fs.String("out", "", "directory to write the merged result to (default a new results/<scenario>-merged-<UTC time>/); refused when it holds a result, unless --force")
	force := fs.Bool("force", false, forceUsage)
	shardFlag := fs.String("shard", "", "verify only shard `I/K` of the subjects (FNV-1a hash of each subject's name, modulo K; clients for a contract counted per client across subjects) and write that shard's result, exit 0; join the K shards with --join")
	join := fs.Bool("join", false, "join the results of `merge --shard I/K`, every shard of one merge once, given as the DIRs, into the merged result")
	var cf ciFlags
	cf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var shard segment.Shard
	if *shardFlag != "" {
		var err error
		if shard, err = segment.ParseShard(*shardFlag); err != nil {
			return badInput(fmt.Errorf("--shard: %w", err))
		}
		switch {
		case *join:
			return badInput(errors.New("--shard and --join: a merge either verifies one shard or joins the shards' results"))
		case cf.junit != "" || cf.metrics != "":
			return badInput(errors.New("--junit and --metrics-report report the joined result: give them to merge --join, not to --shard"))
		}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		if *join {
			return badInput(errors.New("--join: no shard result given: name each shard's results directory"))
		}
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
		if !*join {
			if err := result.CheckPartialLogs(dir, r); err != nil { // read as streams by the merge
				return badInput(fmt.Errorf("%s: %w", dir, err))
			}
		}
		parts = append(parts, segment.Part{Dir: dir, Result: r})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var res *result.Result
	var failures []string
	var err error
	switch {
	case *join:
		res, failures, err = segment.Join(parts)
		if err != nil {
			return badInput(fmt.Errorf("--join: %w", err))
		}
	default:
		res, failures, err = segment.MergeShard(parts, shard)
		if err != nil {
			return badInput(err)
		}
	}
	var o *outDir
	if *out == "" {
		name := res.Scenario.Name + "-merged-"
		if res.Shard != nil {
			name += fmt.Sprintf("shard-%d-of-%d-", res.Shard.Index, res.Shard.Count)
		}
		o, err = newOutDir("results", name+timeStamp(time.Now()))
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
	switch {
	case res.Shard != nil:
		fmt.Fprintf(stdout, "shard %d/%d of the merge of %d of %d segments: %s (join the %d shards with merge --join)\n", res.Shard.Index,
			res.Shard.Count, len(parts), len(parts)+len(res.MissingSegments), o.path, res.Shard.Count)
		return nil
	case *join:
		fmt.Fprintf(stdout, "joined %d shards of the merge of %d of %d segments: %s\n", res.JoinedShards, len(res.Generators),
			len(res.Generators)+len(res.MissingSegments), o.path)
	default:
		fmt.Fprintf(stdout, "merged %d of %d segments: %s\n", len(parts), len(parts)+len(res.MissingSegments), o.path)
	}
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
