package capacity

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/measure"
)

// fillRequests returns the requests per subject and the number of subjects of the memory step
// for an algorithm, a limit and the subjects asked for (see Capacity).
func fillRequests(d algorithms.Description, l algorithms.Limit, subjects int) (perSubject, n int) {
	perSubject = int(min(l.Limit, maxFill))
	if d.Memory == "O(1)" {
		perSubject = int(min(l.Limit, 2))
	}
	n = subjects
	if n*perSubject > memoryBudget {
		n = max(memoryBudget/perSubject, min(memoryMinSubjects, subjects))
	}
	return perSubject, n
}

// memoryStep touches fresh subjects until each is at its limit and measures what they cost:
// the used_memory delta and MEMORY USAGE of a sample of their keys. It is one measurement whose
// load is a measure.Fill, with the limit's window stretched to memoryWindow so that no state
// expires before it is read.
func (sw *sweep) memoryStep(ctx context.Context) (Memory, error) {
	var m Memory
	l := sw.o.Scenario.Limit
	l.Window = max(l.Window, memoryWindow)
	m.Window = l.Window.String()
	per, n := fillRequests(sw.alg.Describe(), l, sw.o.MemorySubjects)
	m.Subjects, m.RequestsPerSubject = n, per
	mm, cost, err := sw.measure1(ctx, l, measure.Fill(n, per, l.Window), "memory")
	if err != nil {
		return m, fmt.Errorf("memory step: %w", err)
	}
	if cost.KeysErr != nil {
		return m, measure.Mark(fmt.Errorf("memory step: MEMORY USAGE: %w", cost.KeysErr))
	}
	m.UsedMemoryDelta = cost.After.Memory - cost.Before.Memory
	m.BytesPerSubject = math.Round(float64(m.UsedMemoryDelta) / float64(n))
	m.Keys = cost.Keys
	m.SampledKeys = min(cost.Keys, int64(measure.MemorySample*len(sw.tgt.Masters())))
	m.MemoryUsagePerSubject = math.Round(float64(cost.Bytes) / float64(n))
	var notes []string
	if failed := mm.Entry.Errors + mm.Entry.Unknown; failed > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d requests failed", failed, n*per))
	}
	if m.UsedMemoryDelta <= 0 {
		notes = append(notes, "used_memory did not grow (the allocator reused freed memory): projections use MEMORY USAGE")
	}
	m.Note = strings.Join(notes, "; ")
	return m, nil
}
