//go:build !(linux || darwin)

package bench_test

import "time"

// cpuUsed cannot tell the CPU time here; see loadgen_cpu_test.go.
func cpuUsed() (self, children time.Duration, ok bool) { return 0, 0, false }
