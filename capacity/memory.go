package capacity

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/runner"
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
// the used_memory delta and MEMORY USAGE of a sample of their keys.
func memoryStep(ctx context.Context, tgt *redisenv.Target, a algorithms.Algorithm, l algorithms.Limit,
	subjects int, runID string) (Memory, error) {
	var m Memory
	name := a.Describe().Name
	prefix := runner.KeyPrefix(runID, name, "memory")
	cleanCtx := context.WithoutCancel(ctx)
	if err := tgt.ClaimPrefix(ctx, prefix); err != nil {
		return m, runner.LostOr(ctx, tgt, fmt.Errorf("memory step: %w", err))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(cleanCtx, 30*time.Second)
		defer cancel()
		_ = tgt.CleanupPrefix(cctx, prefix)
	}()
	l.Window = max(l.Window, memoryWindow)
	m.Window = l.Window.String()
	lim, err := a.Prepare(ctx, tgt.Client, l, prefix)
	if err != nil {
		return m, runner.LostOr(ctx, tgt, fmt.Errorf("memory step: prepare %s: %w", name, err))
	}
	per, n := fillRequests(a.Describe(), l, subjects)
	m.Subjects, m.RequestsPerSubject = n, per

	before, err := runner.ReadStats(ctx, tgt)
	if err != nil {
		return m, runner.LostOr(ctx, tgt, fmt.Errorf("memory step: %w", err))
	}
	failed, err := fill(ctx, tgt, lim, n, per)
	if err != nil {
		return m, runner.LostOr(ctx, tgt, fmt.Errorf("memory step: %w", err))
	}
	statCtx, cancel := context.WithTimeout(cleanCtx, 30*time.Second)
	defer cancel()
	after, err := runner.ReadStats(statCtx, tgt)
	if err != nil {
		return m, runner.LostOr(ctx, tgt, fmt.Errorf("memory step: %w", err))
	}
	m.UsedMemoryDelta = after.Memory - before.Memory
	m.BytesPerSubject = math.Round(float64(m.UsedMemoryDelta) / float64(n))
	keys, bytes, err := runner.KeyMemory(statCtx, tgt, prefix)
	if err != nil {
		return m, runner.LostOr(ctx, tgt, fmt.Errorf("memory step: MEMORY USAGE: %w", err))
	}
	m.Keys = keys
	m.SampledKeys = min(keys, int64(runner.MemorySample*len(tgt.Masters())))
	m.MemoryUsagePerSubject = math.Round(float64(bytes) / float64(n))
	var notes []string
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d requests failed", failed, n*per))
	}
	if m.UsedMemoryDelta <= 0 {
		notes = append(notes, "used_memory did not grow (the allocator reused freed memory): projections use MEMORY USAGE")
	}
	m.Note = strings.Join(notes, "; ")
	return m, nil
}

// fill sends per requests for each of n subjects, pipelined from a few connections, and returns
// how many failed. The client is closed before it returns so that its buffers are not counted.
func fill(ctx context.Context, tgt *redisenv.Target, lim algorithms.Limiter, n, per int) (failed int64, err error) {
	const workers, batch = 4, 512
	client := tgt.NewClient(redisenv.ClientOptions{PoolSize: workers, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	defer client.Close()
	next := make(chan int)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for first := range next {
				pipe := client.Pipeline()
				var pend []algorithms.Pending
				last := min(first+max(batch/per, 1), n)
				for i := first; i < last; i++ {
					subj := fmt.Sprintf("m%d", i)
					for range per {
						pend = append(pend, algorithms.Do(ctx, lim, pipe, algorithms.Request{Subject: subj, Client: "c0", Cost: 1, ClientTime: time.Now()}))
					}
				}
				_, xerr := pipe.Exec(ctx)
				var bad int64
				for _, p := range pend {
					if _, err := p(); err != nil {
						bad++
					}
				}
				mu.Lock()
				failed += bad
				if xerr != nil && bad == int64(len(pend)) && firstErr == nil {
					firstErr = xerr
				}
				mu.Unlock()
			}
		})
	}
	step := max(batch/per, 1)
loop:
	for i := 0; i < n; i += step {
		select {
		case next <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return failed, fmt.Errorf("%w: %w", runner.ErrInterrupted, ctx.Err())
	}
	return failed, firstErr
}
