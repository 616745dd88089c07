// Package capacity is `limitbench capacity`: the sweep that finds the highest open-loop rate one
// Redis shard sustains for one algorithm under a latency objective, the memory step that measures
// what a limited subject costs, capacity.json's schema (Result, limitbench/capacity/v1) and its
// rendering as a terminal table, Markdown and a figure, with the projections to other scales.
//
// Each step of the sweep, and the memory step, is one measurement (measure.Do) on a fresh key
// prefix of one environment the sweep starts, with the scenario's call mode (measure.Functions)
// and the server's cost (measure.Cost); the memory step's load is a measure.Fill. A key that
// could not be removed from an external Redis is a note of the result, and said through Logf. The command places the process's CPUs first (cpus.Apply) and
// passes what it did in Options.CPUs; the sweep pins only the redis-server children it started.
//
// Result.Noise is how busy the machine was over the sweep (steal and other processes' CPU time
// from /proc/stat, the probe's round trip against Redis's own time per call, the spread of steps
// at the same rate); when it is over a limit the rendering leads with a warning that the figure
// measures a busy machine rather than Redis.
package capacity
