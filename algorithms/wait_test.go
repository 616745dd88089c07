package algorithms

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestWaitValidate(t *testing.T) {
	for _, tc := range []struct {
		w    Wait
		want string // "" for valid
	}{
		{Wait{}, ""},
		{Wait{Replicas: 1}, ""},
		{Wait{Replicas: 5, Timeout: MaxWaitTimeout}, ""},
		{Wait{Replicas: -1}, "replicas must be between 0 and 5, got -1"},
		{Wait{Replicas: 6}, "replicas must be between 0 and 5, got 6"},
		{Wait{Replicas: 1, Timeout: -time.Millisecond}, "timeout must be > 0"},
		{Wait{Replicas: 1, Timeout: 1500 * time.Microsecond}, "whole milliseconds"},
		{Wait{Replicas: 1, Timeout: MaxWaitTimeout + time.Millisecond}, "at most 2s"},
		{Wait{Replicas: 1, DenyShort: true}, ""},
		{Wait{DenyShort: true}, "deny_short needs replicas > 0"},
	} {
		err := tc.w.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v.Validate() = %v; want nil", tc.w, err)
		case tc.want != "" && (!errors.Is(err, ErrBadWait) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v.Validate() = %v; want ErrBadWait with %q", tc.w, err, tc.want)
		}
	}
}

func TestWaitJSON(t *testing.T) {
	for _, tc := range []struct {
		w        Wait
		json     string
		readBack Wait
	}{
		{Wait{Replicas: 2, Timeout: 250 * time.Millisecond}, `{"replicas":2,"timeout_ms":250}`, Wait{Replicas: 2, Timeout: 250 * time.Millisecond}},
		// The default timeout is written as it applies.
		{Wait{Replicas: 1}, `{"replicas":1,"timeout_ms":100}`, Wait{Replicas: 1, Timeout: DefaultWaitTimeout}},
		{Wait{Replicas: 1, Timeout: time.Second, DenyShort: true}, `{"replicas":1,"timeout_ms":1000,"deny_short":true}`,
			Wait{Replicas: 1, Timeout: time.Second, DenyShort: true}},
	} {
		b, err := json.Marshal(tc.w)
		if err != nil || string(b) != tc.json {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %s", tc.w, b, err, tc.json)
		}
		var got Wait
		if err := json.Unmarshal(b, &got); err != nil || got != tc.readBack {
			t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", b, got, err, tc.readBack)
		}
	}
	if s := (Wait{Replicas: 1, Timeout: 20 * time.Millisecond}).String(); s != "WAIT 1 20" {
		t.Errorf("String() = %q; want \"WAIT 1 20\"", s)
	}
}

// TestWaitCallSingle runs WaitCall on a single server, which has no replica: the request is
// decided as without it, and its WAIT comes back with 0 replicas once its timeout has passed,
// on the client, on a connection and on a pipeline the caller executes; an autopipeliner is
// refused (ErrWaitUnroutable) and its request still decided.
func TestWaitCallSingle(t *testing.T) {
	env := redistest.Single(t)
	ctx := context.Background()
	c := env.Target.Client
	a, err := Lookup("gcra")
	if err != nil {
		t.Fatal(err)
	}
	lim, err := a.Prepare(ctx, c, Limit{Limit: 1000, Window: time.Second}, env.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	w := Wait{Replicas: 1, Timeout: 20 * time.Millisecond}
	req := Request{Subject: "s", Cost: 1}
	check := func(name string, call *WaitCall, took time.Duration) {
		t.Helper()
		d, err := call.Result()
		if err != nil || !d.Allowed {
			t.Errorf("%s: Result() = %+v, %v; want an admission", name, d, err)
		}
		n, err := call.Acked()
		if err != nil || n != 0 || !call.Short() {
			t.Errorf("%s: Acked() = %d, %v, Short() = %v; want 0 replicas, short", name, n, err, call.Short())
		}
		if took < w.Timeout {
			t.Errorf("%s: took %s; want at least the WAIT's timeout %s", name, took, w.Timeout)
		}
	}
	call := NewWaitCall(lim, w)
	start := time.Now()
	call.Send(ctx, c, req)
	check("client", call, time.Since(start))

	conn := c.(*redis.Client).Conn()
	defer conn.Close()
	start = time.Now()
	call.Send(ctx, conn, req)
	check("connection", call, time.Since(start))

	pipe := c.Pipeline()
	start = time.Now()
	call.Send(ctx, pipe, req)
	_, _ = pipe.Exec(ctx)
	check("pipeline", call, time.Since(start))

	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	call.Send(ctx, ap, req)
	if d, err := call.Result(); err != nil || !d.Allowed {
		t.Errorf("autopipeliner: Result() = %+v, %v; want an admission", d, err)
	}
	if _, err := call.Acked(); !errors.Is(err, ErrWaitUnroutable) || !call.Short() {
		t.Errorf("autopipeliner: Acked() error %v; want ErrWaitUnroutable", err)
	}
}

// TestWaitCallSentinel: on a Sentinel group's failover client, whose master has one replica,
// WAIT 1 comes back with that replica's acknowledgement.
func TestWaitCallSentinel(t *testing.T) {
	env := redistest.Sentinel(t)
	ctx := context.Background()
	a, err := Lookup("token-bucket")
	if err != nil {
		t.Fatal(err)
	}
	lim, err := a.Prepare(ctx, env.Target.Client, Limit{Limit: 1000, Window: time.Second}, env.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	call := NewWaitCall(lim, Wait{Replicas: 1, Timeout: MaxWaitTimeout})
	var got []int64
	for range 3 {
		call.Send(ctx, env.Target.Client, Request{Subject: "s", Cost: 1})
		if d, err := call.Result(); err != nil || !d.Allowed {
			t.Fatalf("Result() = %+v, %v; want an admission", d, err)
		}
		n, err := call.Acked()
		if err != nil {
			t.Fatalf("Acked(): %v", err)
		}
		got = append(got, n)
	}
	if diff := cmp.Diff([]int64{1, 1, 1}, got); diff != "" {
		t.Errorf("replicas acknowledged (-want +got):\n%s", diff)
	}
}

func TestWaitApply(t *testing.T) {
	allowed := Decision{Allowed: true, Remaining: 4, TimeMicros: 7, Clock: ClockServer}
	denied := Decision{Remaining: 0, RetryAfter: time.Second, TimeMicros: 7, Clock: ClockServer}
	asDenial := Decision{TimeMicros: 7, Clock: ClockServer}
	for _, tc := range []struct {
		name  string
		w     Wait
		d     Decision
		short bool
		want  Decision
	}{
		{"admit: short admission stands", Wait{Replicas: 1}, allowed, true, allowed},
		{"deny: acknowledged admission stands", Wait{Replicas: 1, DenyShort: true}, allowed, false, allowed},
		{"deny: short admission is a denial", Wait{Replicas: 1, DenyShort: true}, allowed, true, asDenial},
		{"deny: short denial unchanged", Wait{Replicas: 1, DenyShort: true}, denied, true, denied},
	} {
		if got := tc.w.Apply(tc.d, tc.short); got != tc.want {
			t.Errorf("%s: Apply(%+v, %v) = %+v; want %+v", tc.name, tc.d, tc.short, got, tc.want)
		}
	}
}
