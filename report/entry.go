package report

import "github.com/limitbench/limitbench/internal/load"

// NewEntry returns the entry of algorithm on topology with load's figures of res: its counts,
// lateness, duration and rates (rates rounded to three decimals). The other sections are their
// owners' to fill.
func NewEntry(algorithm, topology string, res *load.Result) Entry {
	c := res.Counts
	e := Entry{
		Algorithm:     algorithm,
		Topology:      topology,
		Requests:      int64(c.Requests),
		Allowed:       int64(c.Allowed),
		Denied:        int64(c.Denied),
		Errors:        int64(c.Failed),
		Unknown:       int64(c.Unknown),
		Dropped:       int64(c.Missed + c.Dropped),
		Late:          int64(c.Late),
		DurationS:     res.Duration.Seconds(),
		OfferedRPS:    Round3(res.OfferedRate),
		ThroughputRPS: Round3(res.Throughput),
	}
	if c.Requests > 0 {
		e.LateFraction = float64(c.Late) / float64(c.Requests)
	}
	if res.Plan.Wait.Enabled() {
		short := int64(c.WaitShort)
		e.WaitShort = &short
	}
	return e
}
