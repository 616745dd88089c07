package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/result"
)

func init() {
	register("report", "rebuild reports from saved result.json files; with several, compare them", runReport)
}

// runReport implements `limitbench report [--out DIR] [--force] RESULT.json...`. With one result
// it rebuilds result.json, the .hgrm files, the plots, report.md and report.html in DIR (default:
// the result's own directory, which it may always rewrite). With several it writes comparison.md
// and comparison.html to DIR (default: the current directory), every later result against the
// first, same algorithm and topology. A DIR that holds a result of the kind it would write
// (another run's result.json, a comparison.md) is refused unless --force (see outdir.go).
// samePath reports whether a and b name the same directory.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "[--out DIR] [--force] RESULT.json...", stderr)
	out := fs.String("out", "", "directory to write to (default: the result's directory for one result, . for a comparison); refused when it holds another result of that kind, unless --force")
	force := fs.Bool("force", false, forceUsage)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	paths := fs.Args()
	if len(paths) == 0 {
		fs.Usage()
		return badInput(errors.New("no result file given"))
	}
	var results []*result.Result
	for _, p := range paths {
		r, err := result.Read(p)
		if err != nil {
			return badInput(err) // result.Read's errors name the file

		}
		results = append(results, r)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(results) == 1 {
		dir := *out
		own := filepath.Dir(paths[0])
		if dir == "" || samePath(dir, own) {
			dir = own // a rebuild in place
		} else {
			o, err := explicitOutDir("--out", dir, result.FileName, *force, stderr)
			if err != nil {
				return err
			}
			defer o.release()
		}
		if err := report.WriteAll(dir, results[0]); err != nil {
			return fmt.Errorf("write report to %s: %w", dir, err)
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(dir, report.MarkdownFile), filepath.Join(dir, report.HTMLFile))
		return nil
	}
	c, err := report.Compare(results)
	if err != nil {
		return badInput(err)
	}
	c.Labels = paths
	dir, label := *out, "--out"
	if dir == "" {
		dir, label = ".", "the current directory"
	}
	o, err := explicitOutDir(label, dir, report.ComparisonMarkdownFile, *force, stderr)
	if err != nil {
		return err
	}
	defer o.release()
	if err := report.WriteComparison(dir, c); err != nil {
		return fmt.Errorf("write comparison to %s: %w", dir, err)
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(dir, report.ComparisonMarkdownFile), filepath.Join(dir, report.ComparisonHTMLFile))
	return nil
}
