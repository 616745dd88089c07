package measure

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// external returns the package's shared single node as an external target: its clock is not
// taken to be the harness's, so every measurement on it measures the offset.
func external(t *testing.T) *redisenv.Target {
	t.Helper()
	tgt := redistest.Single(t).Target
	u := url.URL{Scheme: "redis", User: url.UserPassword("default", tgt.Password), Host: tgt.Masters()[0]}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ext, err := redisenv.Start(ctx, redisenv.Config{Backend: redisenv.BackendExternal, URL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Stop(context.Background()) })
	return ext
}

// gcraSpec returns a spec of gcra (10 per second) on tgt with plan p on a fresh prefix.
func gcraSpec(t *testing.T, tgt *redisenv.Target, p load.Plan) Spec {
	t.Helper()
	a, err := algorithms.Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Target: tgt, Topology: "single", Algorithm: a, Limit: algorithms.Limit{Limit: 10, Window: time.Second}, Plan: p,
		Prefix: KeyPrefix(NewRunID(), "gcra", "t")}
}

// TestDriftRule: issue 27 found the clock-drift allowance computed two ways (a run's over its
// span plus a minute, a hunt trial's over a minute alone). Every measurement now widens the
// measured offset's error by Drift(span), span the load's warmup and duration, whatever its plan:
// a run's, a hunt trial's, a capacity memory step's fill, a segment's (OneClock).
func TestDriftRule(t *testing.T) {
	tgt := external(t)
	if got, want := Drift(9*time.Second), time.Duration(float64(69*time.Second)*100e-6); got != want {
		t.Errorf("Drift(9s) = %s; want %s (100 ppm of the span and a minute)", got, want)
	}
	oneClock := Stage{Setup: func(_ context.Context, m *Measurement) error { m.OneClock = true; return nil }}
	for _, tt := range []struct {
		name   string
		plan   load.Plan
		stages []Stage
	}{
		{"run", load.Plan{Arrival: load.Constant(100), Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, Clients: 2,
			Keys: load.Keys{Count: 3}}, nil},
		{"hunt trial", load.Plan{Arrival: load.Replay(burstTrace(5)), Duration: 100 * time.Millisecond, Clients: 2, LateAfter: time.Minute}, nil},
		{"memory fill", Fill(10, 2, 10*time.Minute), nil},
		{"segment", load.Plan{Arrival: load.Constant(100), Duration: 200 * time.Millisecond, Clients: 2, Keys: load.Keys{Count: 3}},
			[]Stage{oneClock}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Do(context.Background(), gcraSpec(t, tgt, tt.plan), tt.stages...)
			if err != nil {
				t.Fatal(err)
			}
			if m.Clock == nil {
				t.Fatal("no clock offset measured on an external server")
			}
			drift := Drift(tt.plan.Warmup + tt.plan.Duration)
			if measured := m.Clock.Err - drift; measured < 0 || measured > 100*time.Millisecond {
				t.Errorf("offset error %s = measured %s + drift %s; want the drift over the plan's span added once", m.Clock.Err,
					measured, drift)
			}
		})
	}
}

// TestLifecycleOrder: the stages act at their steps in the order the package doc gives, in the
// order they were given (Release in reverse); a failed step ends the measurement, and only
// Release follows it.
func TestLifecycleOrder(t *testing.T) {
	env := redistest.Single(t)
	var mu sync.Mutex
	var calls []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, s)
	}
	stage := func(name string, fail string) Stage {
		step := func(step string) error {
			note(name + "." + step)
			if step == fail {
				return errors.New(name + " failed at " + step)
			}
			return nil
		}
		return Stage{
			Setup:          func(context.Context, *Measurement) error { return step("setup") },
			PrepareContext: func(ctx context.Context) context.Context { note(name + ".prepare"); return ctx },
			Begin:          func(context.Context, *Measurement) error { return step("begin") },
			Meet:           func(context.Context, *Measurement) error { return step("meet") },
			Start:          func(context.Context, *Measurement, time.Time) { note(name + ".start") },
			Observe:        func(*load.Outcome) bool { note(name + ".observe"); return false },
			End:            func(context.Context, *Measurement, error) { note(name + ".end") },
			Verify:         func(*Measurement, *verify.Measurement) { note(name + ".verify") },
			Report:         func(*Measurement, *result.Entry) { note(name + ".report") },
			Finish:         func(context.Context, *Measurement, *result.Entry) error { return step("finish") },
			Release:        func(context.Context, *Measurement) { note(name + ".release") },
		}
	}
	p := load.Plan{Arrival: load.Constant(50), Duration: 100 * time.Millisecond, Clients: 1}
	m, err := Do(context.Background(), gcraSpec(t, env.Target, p), stage("a", ""), stage("b", ""))
	if err != nil || m.Entry == nil {
		t.Fatalf("Do = %v, entry %v", err, m.Entry)
	}
	want := "a.setup b.setup a.prepare b.prepare a.begin b.begin a.meet b.meet a.start b.start " +
		"a.observe b.observe a.end b.end a.verify b.verify a.report b.report a.finish b.finish b.release a.release"
	if got := strings.Join(calls, " "); !orderOf(got, want) {
		t.Errorf("calls %s; want %s", got, want)
	}
	calls = nil
	m, err = Do(context.Background(), gcraSpec(t, env.Target, p), stage("a", "begin"), stage("b", ""))
	if err == nil || !strings.Contains(err.Error(), "a failed at begin") || m.Entry != nil {
		t.Fatalf("Do with a failing Begin = %v, entry %v; want the stage's error and no entry", err, m.Entry)
	}
	if got := strings.Join(calls, " "); got != "a.setup b.setup a.prepare b.prepare a.begin b.release a.release" {
		t.Errorf("calls %s; want the steps up to a.begin, then the releases", got)
	}
}

// orderOf reports whether got is want with its observe calls repeated, once per outcome.
func orderOf(got, want string) bool {
	var g []string
	for _, s := range strings.Fields(got) {
		if strings.HasSuffix(s, ".observe") && slices.Contains(g, s) {
			continue
		}
		g = append(g, s)
	}
	return strings.Join(g, " ") == want
}

// TestPrefixInUse: a prefix that holds a key is not claimed: the measurement writes nothing,
// removes nothing and fails with ErrRedis naming the key.
func TestPrefixInUse(t *testing.T) {
	env := redistest.Single(t)
	spec := gcraSpec(t, env.Target, load.Plan{Arrival: load.Constant(50), Duration: 100 * time.Millisecond, Clients: 1})
	ctx := context.Background()
	if err := env.Target.Client.Set(ctx, spec.Prefix+"someone", "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	released := false
	m, err := Do(ctx, spec, Stage{Release: func(context.Context, *Measurement) { released = true }})
	if !errors.Is(err, ErrRedis) || !errors.Is(err, redisenv.ErrPrefixInUse) || m.Entry != nil || released {
		t.Fatalf("Do on a prefix in use = %v, entry %v, released %v; want ErrRedis, no entry, nothing released", err, m.Entry, released)
	}
	if n, err := env.Target.Client.Exists(ctx, spec.Prefix+"someone").Result(); err != nil || n != 1 {
		t.Errorf("the key already under the prefix: exists %d, %v; want it left alone", n, err)
	}
}
