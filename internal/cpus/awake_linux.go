package cpus

import (
	"encoding/binary"
	"fmt"
	"os"
)

// cpuLatencyFile is the kernel's PM QoS interface for the CPUs' wake-up latency.
const cpuLatencyFile = "/dev/cpu_dma_latency"

// holdAwake keeps every CPU out of idle states that take time to leave, until release is
// called: it writes a wake-up latency limit of 0 µs to /dev/cpu_dma_latency and keeps the file
// open, as latency benchmarks such as cyclictest do (the limit lasts as long as the file is open,
// so it also ends if the process dies). Idle CPUs then poll instead of halting.
//
// Why a capacity sweep wants it: a round trip between a pinned load generator and a Redis pinned
// to another CPU wakes an idle CPU twice, and on a virtual machine waking a halted virtual CPU
// costs the host's scheduler tens to hundreds of µs. On the 2-CPU VM limitbench is developed on,
// that doubled the median round trip (about 210 against 110 µs) and put the p99 over 2 ms at
// rates Redis handled with ease, which is the machine's idle policy, not Redis. The price is that
// idle CPUs spin for the sweep's duration.
//
// It needs write access to the file (root, usually); the error says why it could not.
func holdAwake() (release func(), err error) {
	f, err := os.OpenFile(cpuLatencyFile, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	var zero [4]byte
	binary.NativeEndian.PutUint32(zero[:], 0)
	if _, err := f.Write(zero[:]); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write %s: %w", cpuLatencyFile, err)
	}
	return func() { _ = f.Close() }, nil
}
