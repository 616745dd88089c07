package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SchemaVersion is the value of Result.Schema this package writes and reads.
const SchemaVersion = "limitbench/result/v1"

// FileName is the name Write gives result.json inside a results directory.
const FileName = "result.json"

// ErrSchema reports a result.json that is not limitbench/result/v1 or is inconsistent with it.
var ErrSchema = errors.New("result: not a limitbench/result/v1 result")

// Validate reports every inconsistency of r with the schema at once, wrapped in ErrSchema.
func (r *Result) Validate() error {
	var errs []error
	if r.Schema != SchemaVersion {
		errs = append(errs, fmt.Errorf("schema is %q, want %q", r.Schema, SchemaVersion))
	}
	seen := map[string]bool{}
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.Algorithm == "" || e.Topology == "" {
			errs = append(errs, fmt.Errorf("entries[%d]: algorithm and topology are required", i))
			continue
		}
		if seen[e.Name()] {
			errs = append(errs, fmt.Errorf("entries[%d]: duplicate %s", i, e.Name()))
		}
		seen[e.Name()] = true
		t := e.Timeline
		n := len(t.Offered)
		if len(t.Admitted) != n || len(t.Denied) != n || len(t.Errors) != n || (t.Limit != nil && len(t.Limit) != n) {
			errs = append(errs, fmt.Errorf("entries[%d] (%s): timeline slices differ in length", i, e.Name()))
		}
		if n > 0 && !(t.BinS > 0) {
			errs = append(errs, fmt.Errorf("entries[%d] (%s): timeline bin_s must be > 0", i, e.Name()))
		}
		for _, h := range []struct{ name, s string }{{"latency", e.Histograms.Latency}, {"service", e.Histograms.Service}} {
			if _, err := DecodeHistogram(h.s); err != nil {
				errs = append(errs, fmt.Errorf("entries[%d] (%s): histograms.%s: %w", i, e.Name(), h.name, err))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrSchema, errors.Join(errs...))
}

// Write writes r as indented JSON to dir/result.json, creating dir, and records the name in
// r.Files.Result. An empty r.Schema is set to SchemaVersion.
func (r *Result) Write(dir string) error {
	if r.Schema == "" {
		r.Schema = SchemaVersion
	}
	r.Files.Result = FileName
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	return WriteFile(filepath.Join(dir, FileName), append(b, '\n'))
}

// Read reads and validates a result.json. Errors name the path.
func Read(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrSchema, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteFile writes b to path, creating its directory, atomically: b goes to a temporary file
// beside path, which is then renamed over it, so that a reader (or a process killed mid-write,
// whose checkpoint is its result.json) never sees a partial file, only the old one or the new.
// The file gets mode 0644 and a failed Close is reported; the temporary file is removed on
// error.
func WriteFile(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
