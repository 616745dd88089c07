//go:build !linux

package redisenv

import "fmt"

// PinProcess restricts every thread of process pid to cpus; only Linux supports it, elsewhere it
// returns an error wrapping ErrCannotPin.
func PinProcess(pid int, cpus []int) error {
	return fmt.Errorf("%w: CPU affinity is only supported on Linux", ErrCannotPin)
}

// ProcessCPUs returns the CPUs process pid may run on; only Linux supports it, elsewhere it
// returns an error wrapping ErrCannotPin.
func ProcessCPUs(pid int) ([]int, error) {
	return nil, fmt.Errorf("%w: CPU affinity is only supported on Linux", ErrCannotPin)
}

func ownChild(pid int) error {
	return fmt.Errorf("process %d: CPU affinity is only supported on Linux", pid)
}
