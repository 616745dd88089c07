package verify

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// TestCoarseClockOnRedis runs resource-consumer-published (seed 004 as written: whole seconds of
// TIME, the resource refused only when its count equals the limit) and the corrected
// resource-consumer on a real Redis, one request at a time, and checks their logs (each
// decision at the exact TIME the script returned, as the harness logs a server-clock script)
// against the contract the published design declares: a granularity of 1 s, equal to the
// window, so K = 3.
//
//   - "tick": L requests in the 100 ms before a whole second and L just after, which the
//     published design admits (its window is the current second): 2L within about 100 ms, what
//     a clock of whole seconds allows, so no definite violation; ApproachOf scores it 2/3.
//   - "jump": 3·⌈4L/3⌉ permits within a second, each request of cost 3 from a new consumer, in
//     the middle of a second: the count takes 3 at a time and never equals L (L = 5), so the
//     published design admits them all, more than 3L, a definite violation (condition (i)).
//   - "one": one request of L+1 permits, which the published design admits on an empty set: a
//     definite violation of both limits (condition (ii)).
//
// The corrected algorithm, sent the same requests, is never flagged.
func TestCoarseClockOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real redis-server")
	}
	const L = 5
	l := algorithms.Limit{Limit: L, Window: time.Second}
	target := redistest.Start(t, redisenv.Config{Backend: redisenv.BackendProcess, Topology: redisenv.TopologySingle})
	ctx := context.Background()
	for _, name := range []string{"resource-consumer-published", "resource-consumer"} {
		t.Run(name, func(t *testing.T) {
			a, err := algorithms.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			c, err := algorithms.ResourceConsumerPublished{}.Contract(l)
			if err != nil {
				t.Fatal(err)
			}
			lim, err := a.Prepare(ctx, target.Client, l, "rcp:"+name+":")
			if err != nil {
				t.Fatal(err)
			}
			log := &Log{Subjects: []string{"tick", "jump", "one"}, Base: time.Now().UnixMicro()}
			client := func(name string) uint16 {
				log.Clients = append(log.Clients, name)
				return uint16(len(log.Clients) - 1)
			}
			do := func(subject uint32, cl uint16, cost int64) {
				t.Helper()
				req := algorithms.Request{Subject: log.Subjects[subject], Client: log.Clients[cl], Cost: cost}
				d, err := algorithms.Do(ctx, lim, target.Client, req)()
				if err != nil {
					t.Fatal(err)
				}
				if d.Clock != algorithms.ClockServer || d.TimeMicros == 0 {
					t.Fatalf("decision %+v: want the server's time", d)
				}
				k := Denied
				if d.Allowed {
					k = Admitted
				}
				at := d.TimeMicros - log.Base
				log.Events = append(log.Events, mustEvent(at, at, subject, cl, uint16(cost), k))
			}
			// untilSecond sleeps until off past the next whole second of the clock that Redis
			// and this process share.
			untilSecond := func(off time.Duration) {
				now := time.Now()
				time.Sleep(now.Truncate(time.Second).Add(time.Second + off).Sub(now))
			}

			// tick: L from 100 ms before a whole second, L just after it.
			untilSecond(time.Second - 100*time.Millisecond)
			for i := range 2 * L {
				if i == L {
					untilSecond(time.Millisecond)
				}
				do(0, client(fmt.Sprint("tick", i)), 1)
				time.Sleep(time.Millisecond)
			}
			// jump and one, in the middle of a second.
			untilSecond(100 * time.Millisecond)
			const jumps = (4*L + 2) / 3
			for i := range jumps {
				do(1, client(fmt.Sprint("jump", i)), 3)
			}
			do(2, client("one"), L+1)

			rep, err := Check(c, cloneLog(log))
			if err != nil {
				t.Fatal(err)
			}
			ap, err := ApproachOf(c, cloneLog(log))
			if err != nil {
				t.Fatal(err)
			}
			bySubject := map[string]int64{}
			for _, lr := range rep.Limits {
				for _, v := range lr.Violations {
					bySubject[v.Subject]++
				}
			}
			published := name == "resource-consumer-published"
			if !published {
				if rep.Definite() > 0 || ap.Score > 1 {
					t.Fatalf("the corrected algorithm is flagged: %d definite (%v), score %v", rep.Definite(), bySubject, ap.Score)
				}
				return
			}
			admitted := map[uint32]int64{}
			for _, e := range log.Events {
				if e.Kind() == Admitted {
					admitted[e.Subject] += int64(e.Permits)
				}
			}
			if admitted[0] != 2*L || admitted[1] != 3*jumps || admitted[2] != L+1 {
				t.Fatalf("the published design admitted %v permits (tick, jump, one); want %d, %d, %d", admitted, 2*L, 3*jumps, L+1)
			}
			if bySubject["tick"] != 0 || bySubject["jump"] == 0 || bySubject["one"] != 2 {
				t.Fatalf("definite violations by subject %v; want none on tick, some on jump, both limits on one", bySubject)
			}
			if w := rep.Limits[0].Worst; w.Subject != "jump" || w.Permits != 3*jumps || w.Allowed != 3*L {
				t.Errorf("worst %+v; want jump's %d permits over %d", w, 3*jumps, 3*L)
			}
			if v := Judge(rep, false); v.Verdict != Fail {
				t.Errorf("Judge = %+v; want fail", v)
			}
			if ap.Score <= 1 {
				t.Errorf("score %v; want above 1", ap.Score)
			}
			// tick alone: 2L across a tick of the clock, what the contract allows.
			tick := &Log{Subjects: log.Subjects, Clients: log.Clients, Base: log.Base}
			for _, e := range log.Events {
				if e.Subject == 0 {
					tick.Events = append(tick.Events, e)
				}
			}
			if ap, err := ApproachOf(c, tick); err != nil || ap.Score != 2.0/3 {
				t.Errorf("tick alone: score %v, %v; want 2/3", ap.Score, err)
			}
		})
	}
}
