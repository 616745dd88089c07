//go:build !linux

package cpus

import (
	"fmt"
	"runtime"
)

// holdAwake keeps the CPUs out of deep idle states on Linux (see awake_linux.go); elsewhere
// it returns an error.
func holdAwake() (release func(), err error) {
	return nil, fmt.Errorf("no CPU wake-up latency control on %s", runtime.GOOS)
}
