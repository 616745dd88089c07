package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/limitbench/limitbench/internal/version"
)

func init() {
	register("version", "print limitbench's version, commit, date, Go version and platform", runVersion)
}

// runVersion prints version.Get(): as lines, or as one JSON object with --json. `limitbench
// --version` runs it too.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "[--json]", stderr)
	asJSON := fs.Bool("json", false, "print a JSON object instead of lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("unexpected arguments: %q", fs.Args()))
	}
	v := version.Get()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	_, err := io.WriteString(stdout, v.String())
	return err
}
