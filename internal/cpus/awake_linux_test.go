package cpus

import (
	"encoding/binary"
	"os"
	"testing"
)

// cpuLatency reads the CPU wake-up latency limit in force, in µs (the kernel's default when no
// one holds one is 2,000,000,000).
func cpuLatency(t *testing.T) int32 {
	t.Helper()
	b, err := os.ReadFile(cpuLatencyFile)
	if err != nil || len(b) < 4 {
		t.Fatalf("read %s: %d bytes, %v", cpuLatencyFile, len(b), err)
	}
	return int32(binary.NativeEndian.Uint32(b))
}

// TestHoldAwake checks, with the kernel's own reading, that the limit is 0 while held and no
// longer 0 once released (unless some other process holds 0 too, which the test cannot tell
// apart and skips).
func TestHoldAwake(t *testing.T) {
	if f, err := os.OpenFile(cpuLatencyFile, os.O_WRONLY, 0); err != nil {
		release, herr := holdAwake()
		if herr == nil {
			release()
			t.Fatalf("holdAwake succeeded although %s cannot be opened for writing: %v", cpuLatencyFile, err)
		}
		t.Skipf("cannot write %s (%v): holdAwake says %v", cpuLatencyFile, err, herr)
	} else {
		_ = f.Close()
	}
	if cpuLatency(t) == 0 {
		t.Skip("another process already holds the CPUs awake")
	}
	release, err := holdAwake()
	if err != nil {
		t.Fatalf("holdAwake: %v", err)
	}
	if got := cpuLatency(t); got != 0 {
		t.Errorf("while held: limit %d µs; want 0", got)
	}
	release()
	if got := cpuLatency(t); got == 0 {
		t.Errorf("after release: limit still 0 µs")
	}
}
