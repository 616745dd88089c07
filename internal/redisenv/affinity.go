package redisenv

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ErrCannotPin means the servers of a target cannot be pinned to CPUs: they were not started by
// this process as redis-server child processes (container and external backends), or the
// operating system has no CPU affinity call limitbench uses (only Linux has).
var ErrCannotPin = errors.New("cannot pin redis servers to CPUs")

// ServerPIDs returns the process ids of the redis-server processes of a process-backend target,
// one per node in the order of Info.Nodes. Each id is read from the node's INFO server
// (process_id) and checked to be a live child process of this process, so an id never names
// someone else's process. Other backends return an error wrapping ErrCannotPin.
func (t *Target) ServerPIDs(ctx context.Context) ([]int, error) {
	if t.Info.Backend != BackendProcess {
		return nil, fmt.Errorf("%w: backend %s does not run redis-server as a child process", ErrCannotPin, t.Info.Backend)
	}
	pids := make([]int, 0, len(t.Info.Nodes))
	for _, n := range t.Info.Nodes {
		c := redis.NewClient(t.nodeOptions(n.Addr))
		info, err := c.Info(ctx, "server").Result()
		_ = c.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: INFO server: %w", n.Addr, err)
		}
		pid, err := strconv.Atoi(infoField(info, "process_id"))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("%w: %s: no process_id in INFO server", ErrCannotPin, n.Addr)
		}
		if err := ownChild(pid); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCannotPin, n.Addr, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// PinServers restricts every thread of every redis-server process of a process-backend target to
// the CPUs in cpus (sched_setaffinity on each thread, so Redis's background threads move too).
// Threads the server starts later inherit the mask. Errors wrap ErrCannotPin for backends whose
// servers are not child processes and on systems without CPU affinity.
func (t *Target) PinServers(ctx context.Context, cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("%w: no CPUs given", ErrBadConfig)
	}
	pids, err := t.ServerPIDs(ctx)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := PinProcess(pid, cpus); err != nil {
			return err
		}
	}
	return nil
}
