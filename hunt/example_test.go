package hunt_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/internal/trace"
)

// A family's schedule for a sliding window of 3 per second: a first request opens a window,
// then the allowance is spent at the window's end and again right after it.
func ExampleFamily_Make() {
	a, _ := algorithms.Lookup("sliding-log")
	target, _ := hunt.TargetOf(a, algorithms.Limit{Limit: 3, Window: time.Second}, nil)
	f, _ := hunt.FamilyNamed("first-hit")
	tr := f.Make(target, hunt.Bounds{Span: 2 * time.Second}, 4)
	_ = tr.WriteCSV(os.Stdout)
	fmt.Printf("%+v\n", hunt.FrameOf(target, hunt.Bounds{Span: 2 * time.Second}))
	// Output:
	// offset,client,subject,cost
	// 484.147004ms,c0,s0,1
	// 1.337018011s,c0,s0,1
	// 1.343587461s,c1,s0,1
	// 1.628987383s,c0,s0,1
	// 1.63701313s,c1,s0,1
	// 1.645038878s,c0,s0,1
	// 1.653064625s,c1,s0,1
	// 1.661090373s,c0,s0,1
	// {Every:1s Offset:500ms}
}

// Shrinking a schedule with a predicate that holds while some instant has 3 requests.
func ExampleShrink() {
	tr := &trace.Trace{Clients: []string{"a", "b"}, Subjects: []string{"s"}}
	for i := range 40 {
		tr.Rows = append(tr.Rows, trace.Row{At: time.Duration(i/4) * 10 * time.Millisecond, Client: uint16(i % 2), Cost: 1})
	}
	threeAtOnce := func(_ context.Context, batch []*trace.Trace) ([]hunt.Answer, error) {
		out := make([]hunt.Answer, len(batch))
		for i, t := range batch {
			n, holds := map[time.Duration]int{}, false
			for _, r := range t.Rows {
				n[r.At]++
				holds = holds || n[r.At] >= 3
			}
			out[i] = hunt.AnswerOf(holds)
		}
		return out, nil
	}
	res, _ := hunt.Shrink(context.Background(), tr, threeAtOnce, hunt.ShrinkOptions{})
	fmt.Println(res.From)
	fmt.Println(res.To, res.Minimal)
	_ = res.Trace.WriteCSV(os.Stdout)
	// Output:
	// 40 rows, 2 clients, 1 subjects, 40 permits, 0s skew, over 90ms
	// 3 rows, 1 clients, 1 subjects, 3 permits, 0s skew, over 0s true
	// offset,client,subject,cost
	// 90ms,b,s,1
	// 90ms,b,s,1
	// 90ms,b,s,1
}
