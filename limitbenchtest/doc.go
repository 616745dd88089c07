// Package limitbenchtest checks a rate limiter from a Go test, in the shape of net/http/httptest:
// the limiter is any function that admits or denies n permits for a subject (Limiter), the
// package plays a schedule of requests against it in real time, records every decision with
// the interval it happened in, checks the log against the contract the limiter promises (with
// package verify, whose doc is the specification), and fails the test with the finding and a
// reproducer when the limiter broke it.
//
//	func TestLimiter(t *testing.T) {
//		contract := verify.TokenBucket(10, 10, time.Second) // what the limiter promises
//		s, err := limitbenchtest.Boundaries(contract, 1)
//		if err != nil {
//			t.Fatal(err)
//		}
//		limitbenchtest.Check(t, contract, newLimiter(), s)
//		limitbenchtest.Hunt(t, contract, newLimiter, limitbenchtest.HuntOptions{Time: 3 * time.Second})
//	}
//
// newLimiter returns a Limiter with no state; docs/library.md has a whole example.
//
// # Schedules
//
// A Schedule is a list of requests at offsets from its time zero, each from a client for a
// subject, played open loop: every request is sent at its offset, whatever happened to the
// ones before. Constant sends at a steady rate; Boundaries aims bursts at the contract's
// boundaries (the allowance spent just before a window boundary, a tick of a coarse clock or
// a whole refill period on the Unix clock, and again just after it); Skewed gives clients clocks that are off
// (a limiter that trusts the caller's time reads it with ClientNow); Hunt searches for a
// breaking schedule within a time budget, with limitbench's own schedule families, and shrinks
// the one it finds. Schedules that aim at boundaries place their time zero on the Unix clock
// (Schedule.Every, Schedule.Offset), so a play first waits up to one period.
//
// # Time
//
// Every decision is timed on this process's clock: the interval from just before the call to
// just after it returned, read both from the wall clock and from the monotonic one and widened to
// cover both, so a limiter that reads time.Now (either reading) decided inside it. Schedules are
// short (a couple of seconds); the calls run on up to Workers goroutines at a time.
//
// # Outcomes
//
// A Limiter's error makes the request's outcome unknown (it may or may not have been admitted):
// it never counts as an admission, and when unknown outcomes could hide a violation the check
// cannot pass, and says so. A test fails when the contract was broken for every placement of
// the decisions in their intervals (a definite violation), or when the log cannot show that it
// was kept (an inconclusive verdict, with its reasons); a possible violation alone fails
// nothing, since a correct limiter can make one.
//
// Stability: v0. The API may change before limitbench's v1.
package limitbenchtest
