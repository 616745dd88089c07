package measure

import (
	"fmt"
	"time"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/trace"
)

// Fill returns the load that puts each of n fresh subjects ("m0", "m1", ...) at per requests,
// as fast as Redis takes them: a trace of n·per rows all due at once, subject after subject,
// sent by fillWorkers workers in pipelines of fillDepth (a measurement that fills memory to read
// what each subject costs, as capacity's memory step does). Its Duration is span, the longest
// the fill may take: the requests of a fill still unsent by then are missed, not sent. Every
// request is late by design; the entry's figures other than the server's cost mean nothing.
func Fill(n, per int, span time.Duration) load.Plan {
	t := &trace.Trace{Clients: []string{"c0"}, Subjects: make([]string, n), Rows: make([]trace.Row, 0, n*per)}
	for i := range n {
		t.Subjects[i] = fmt.Sprintf("m%d", i)
		for range per {
			t.Rows = append(t.Rows, trace.Row{Subject: uint32(i), Cost: 1})
		}
	}
	return load.Plan{Arrival: load.Replay(t), Duration: span, Clients: fillWorkers, Mode: load.ModePipeline, PipelineDepth: fillDepth}
}

// fillWorkers and fillDepth are how a Fill is sent: a few connections, each with pipelines deep
// enough that the fill is bound by Redis, not by round trips.
const fillWorkers, fillDepth = 4, 512
