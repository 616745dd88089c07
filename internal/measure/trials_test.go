package measure

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/verify"
)

// burstTrace is n requests of cost 1 for one subject by two clients, 1 ms apart.
func burstTrace(n int) *trace.Trace {
	t := &trace.Trace{Clients: []string{"a", "b"}, Subjects: []string{"u"}}
	for i := range n {
		t.Rows = append(t.Rows, trace.Row{At: time.Duration(i) * time.Millisecond, Client: uint16(i % 2), Cost: 1})
	}
	return t
}

// TestTrials: each trace of a batch runs on a fresh key prefix at once (no trial sees another's
// state), and its log holds one decision per row, with the trace's names.
func TestTrials(t *testing.T) {
	env := redistest.Single(t)
	a, err := algorithms.Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	l := algorithms.Limit{Limit: 10, Window: time.Second}
	// 10 requests in 10 ms: a burst of the whole capacity, all admitted by a fresh limiter.
	batch := []*trace.Trace{burstTrace(10), burstTrace(10), burstTrace(14)}
	logs, err := Trials(context.Background(), Trial{Target: env.Target, Topology: "single", Algorithm: a, Limit: l,
		Frame: arrival.Align{Every: 100 * time.Millisecond}}, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != len(batch) {
		t.Fatalf("%d logs for %d traces", len(logs), len(batch))
	}
	for i, m := range logs {
		lg := m.Log
		admitted, denied := 0, 0
		for _, e := range lg.Events {
			switch e.Kind() {
			case verify.Admitted:
				admitted++
			case verify.Denied:
				denied++
			default:
				t.Errorf("trial %d: event %v", i, e)
			}
		}
		rows := len(batch[i].Rows)
		if admitted+denied != rows {
			t.Errorf("trial %d: %d decisions for %d rows", i, admitted+denied, rows)
		}
		if admitted < 10 || admitted > 11 {
			t.Errorf("trial %d: %d admitted; want the capacity of a fresh limiter, 10 (11 if a permit refilled meanwhile)", i, admitted)
		}
		if fmt.Sprint(lg.Clients, lg.Subjects) != "[a b] [u]" {
			t.Errorf("trial %d: log names clients %v subjects %v; want the trace's", i, lg.Clients, lg.Subjects)
		}
		c, _ := a.Contract(l)
		ap, err := verify.ApproachOf(c, lg)
		if err != nil {
			t.Fatal(err)
		}
		if ap.Score > 1 {
			t.Errorf("trial %d: gcra scored %g > 1", i, ap.Score)
		}
	}
}

// TestTrialsCanceled: a canceled context ends the batch with ErrInterrupted.
func TestTrialsCanceled(t *testing.T) {
	env := redistest.Single(t)
	a, _ := algorithms.Lookup("gcra")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Trials(ctx, Trial{Target: env.Target, Algorithm: a, Limit: algorithms.Limit{Limit: 10, Window: time.Second}},
		[]*trace.Trace{burstTrace(3)})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Trials on a canceled context: %v; want ErrInterrupted", err)
	}
}
