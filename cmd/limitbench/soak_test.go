package main

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/runner"
)

// TestSoakLiveLineMemory: the live line of a measurement shows the memory the process holds
// (issue 30: a soak's user watches it), and that figure follows what the process allocates.
func TestSoakLiveLineMemory(t *testing.T) {
	line := progressLine(runner.Progress{Algorithm: "gcra", Topology: "single", Duration: time.Hour,
		Progress: load.Progress{Elapsed: time.Minute, Requests: 10}})
	if !strings.HasSuffix(line, " MB in use") {
		t.Errorf("live line %q does not end with the memory in use", line)
	}
	runtime.GC() // what other tests left is freed now, not while the 64 MiB are held
	before := memoryInUse()
	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	after := memoryInUse()
	if after < before+48<<20 {
		t.Errorf("memory in use went from %d to %d bytes with 64 MiB more held", before, after)
	}
	_ = hold[len(hold)-1]
}
