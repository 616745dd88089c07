package verify_test

import (
	"fmt"
	"time"

	"github.com/limitbench/limitbench/verify"
)

// A limiter promised 3 permits per second per subject; it admitted 4 requests of alice within
// 300 ms, each decided between its send and its receive time.
func ExampleCheck() {
	contract := verify.SlidingWindow(3, time.Second)
	var rec verify.Recorder
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		sent := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		outcome := verify.Admitted
		if i == 2 {
			outcome = verify.Denied
		}
		_ = rec.Record("alice", "client-1", 1, sent, sent.Add(2*time.Millisecond), outcome)
	}
	rep, err := verify.Check(contract, rec.Log())
	if err != nil {
		fmt.Println(err)
		return
	}
	lim := rep.Limits[0]
	fmt.Printf("%s: %d definite, %d possible violations\n", lim.Contract, lim.Definite, lim.Possible)
	w := lim.Worst
	fmt.Printf("worst: %s admitted %d permits where %d were allowed, within %v\n",
		w.Subject, w.Permits, w.Allowed, time.Duration(w.Hi-w.Lo)*time.Microsecond)
	fmt.Println(verify.JudgeWith(rep, verify.Warnings{}).Verdict)
	// Output:
	// sliding-window(3, 1s): 1 definite, 1 possible violations
	// worst: alice admitted 4 permits where 3 were allowed, within 402ms
	// fail
}
