package algorithms

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// t0 is a decision time in µs whose TIME fields are "1700000000" and "250000".
const t0 = int64(1_700_000_000_250_000)

func TestReplyFields(t *testing.T) {
	got, err := replyFields("1 0 1700000000 5", 4)
	if want := []int64{1, 0, 1_700_000_000, 5}; err != nil || !cmp.Equal(got[:4], want) || got[4] != 0 {
		t.Fatalf(`replyFields("1 0 1700000000 5", 4) = %v, %v; want %v`, got, err, want)
	}
	bad := []struct {
		name string
		raw  any
	}{
		{"nil", nil},
		{"integer", int64(1)},
		{"array", []any{int64(1), int64(2), int64(3), int64(4)}},
		{"empty", ""},
		{"too few", "1 2 3"},
		{"too many", "1 2 3 4 5"},
		{"double space", "1  2 3 4"},
		{"leading space", " 1 2 3 4"},
		{"trailing space", "1 2 3 4 "},
		{"sign", "1 -2 3 4"},
		{"plus", "1 +2 3 4"},
		{"fraction", "1 2.5 3 4"},
		{"exponent", "1 1e5 3 4"},
		{"letters", "1 two 3 4"},
		{"tab", "1\t2 3 4"},
		{"overflow", "1 99999999999999999999 3 4"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := replyFields(tt.raw, 4); !errors.Is(err, ErrBadReply) {
				t.Errorf("replyFields(%#v, 4) = %v, %v; want ErrBadReply", tt.raw, got, err)
			}
		})
	}
}

func TestTimeMicros(t *testing.T) {
	if got, err := timeMicros(1_700_000_000, 250_000, nil); err != nil || got != t0 {
		t.Errorf("timeMicros(1700000000, 250000) = %d, %v; want %d", got, err, t0)
	}
	for _, tc := range [][2]int64{{0, 0}, {1, 1_000_000}, {-1, 5}, {1, -1}, {1 << 62, 0}} {
		if got, err := timeMicros(tc[0], tc[1], nil); !errors.Is(err, ErrBadReply) {
			t.Errorf("timeMicros(%d, %d) = %d, %v; want ErrBadReply", tc[0], tc[1], got, err)
		}
	}
}

// replyCase is one reply of a compact-reply script and what it must decode to: want, or
// ErrBadReply when bad is set.
type replyCase struct {
	name string
	raw  string
	cost int64
	want Decision
	bad  bool
}

// checkReplies runs decode on every case: a good reply must decode to its Decision, a bad one
// must be ErrBadReply and never an admission.
func checkReplies(t *testing.T, cases []replyCase, decode func(raw any, cost int64) (Decision, error)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decode(tc.raw, tc.cost)
			if tc.bad {
				if !errors.Is(err, ErrBadReply) || got.Allowed {
					t.Errorf("decode(%q, cost %d) = %+v, %v; want ErrBadReply and no admission", tc.raw, tc.cost, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode(%q, cost %d): %v", tc.raw, tc.cost, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decode(%q, cost %d) mismatch (-want +got):\n%s", tc.raw, tc.cost, diff)
			}
		})
	}
}

// server is a decision at t0 on the server's clock.
func server(allowed bool, remaining int64, retry time.Duration) Decision {
	return Decision{Allowed: allowed, Remaining: remaining, RetryAfter: retry, TimeMicros: t0, Clock: ClockServer}
}

// TestGCRAReplies decodes replies of scripts/gcra.lua at T = 100 ms, C = 5 (tolerance 500 ms).
func TestGCRAReplies(t *testing.T) {
	g := &gcraLimiter{interval: 100_000, tolerance: 500_000}
	cases := []replyCase{
		{name: "first of a fresh subject", raw: "1 1700000000350000 1700000000 250000", cost: 1, want: server(true, 4, 0)},
		{name: "the fifth", raw: "1 1700000000750000 1700000000 250000", cost: 1, want: server(true, 0, 0)},
		{name: "cost 3", raw: "1 1700000000550000 1700000000 250000", cost: 3, want: server(true, 2, 0)},
		{name: "denied, full", raw: "0 1700000000750000 1700000000 250000", cost: 1, want: server(false, 0, 100*time.Millisecond)},
		{name: "denied, partly refilled", raw: "0 1700000000710000 1700000000 250000", cost: 2, want: server(false, 0, 160*time.Millisecond)},
		{name: "denied, cost above burst", raw: "0 0 1700000000 250000", cost: 6, want: server(false, 5, 0)},
		{name: "denied, stale TAT", raw: "0 1600000000000000 1700000000 250000", cost: 6, want: server(false, 5, 0)},
		{name: "admitted without a TAT ahead", raw: "1 1700000000250000 1700000000 250000", cost: 1, bad: true},
		{name: "admitted past the burst", raw: "1 1700000000850000 1700000000 250000", cost: 1, bad: true},
		{name: "denied with room", raw: "0 1700000000550000 1700000000 250000", cost: 1, bad: true},
		{name: "denied when empty", raw: "0 0 1700000000 250000", cost: 1, bad: true},
		{name: "allowed 2", raw: "2 1700000000350000 1700000000 250000", cost: 1, bad: true},
		{name: "no time", raw: "1 1700000000350000 0 0", cost: 1, bad: true},
		{name: "µs past a second", raw: "1 1700000000350000 1700000000 1000000", cost: 1, bad: true},
		{name: "table", raw: "1 4 0 1700000000250000 1", cost: 1, bad: true},
	}
	checkReplies(t, cases, func(raw any, cost int64) (Decision, error) { return g.decode(raw, cost*g.interval) })
}

// tbState is a state of scripts/token_bucket.lua as the script packs it: struct.pack('<dd',
// tokens, ts).
func tbState(tokens, ts float64) string {
	b := binary.LittleEndian.AppendUint64(nil, math.Float64bits(tokens))
	return string(binary.LittleEndian.AppendUint64(b, math.Float64bits(ts)))
}

// TestTokenBucketReplies decodes replies of scripts/token_bucket.lua at 10 permits per second,
// C = 5: U = 100,000 units per permit, R = 1 unit per µs, C·U = 500,000.
func TestTokenBucketReplies(t *testing.T) {
	tb := &tokenBucketLimiter{unit: 100_000, rate: 1, capacity: 500_000, quantum: expiryQuantum(500_000, 1)}
	const at = "1700000000 250000 "
	t0f := float64(t0)
	cases := []replyCase{
		{name: "first of a fresh subject", raw: tbState(400_000, t0f), cost: 1, want: server(true, 4, 0)},
		{name: "the second, the state alone", raw: tbState(300_000, t0f), cost: 1, want: server(true, 3, 0)},
		{name: "the state alone, with a space byte", raw: tbState(255_000, t0f), cost: 1, want: server(true, 2, 0)},
		{name: "the time with a state counted then", raw: "1 " + at + tbState(400_000, t0f), cost: 1, want: server(true, 4, 0)},
		{name: "the fifth", raw: "1 " + at + tbState(0, t0f), cost: 1, want: server(true, 0, 0)},
		{name: "clock stepped back", raw: "1 " + at + tbState(150_000, t0f+50_000), cost: 1, want: server(true, 1, 0)},
		{name: "denied, empty", raw: "0 " + at + tbState(0, t0f), cost: 1, want: server(false, 0, 100*time.Millisecond)},
		{name: "denied, refilled since", raw: "0 " + at + tbState(20_000, t0f-50_000), cost: 2, want: server(false, 0, 130*time.Millisecond)},
		{name: "denied, cost above capacity, a full bucket for no state", raw: "0 " + at + tbState(500_000, t0f), cost: 6, want: server(false, 5, 0)},
		{name: "denied, cost above capacity, no state", raw: "0 " + at, cost: 6, bad: true},
		{name: "denied, stored state in the future", raw: "0 " + at + tbState(50_000, t0f+50_000), cost: 1, want: server(false, 0, 50*time.Millisecond)},
		{name: "state with a space byte", raw: "1 " + at + tbState(255_000, t0f), cost: 1, want: server(true, 2, 0)}, // 255000.0 packs a 0x20 byte
		{name: "denied with enough", raw: "0 " + at + tbState(100_000, t0f), cost: 1, bad: true},
		{name: "denied, refilled enough", raw: "0 " + at + tbState(0, t0f-150_000), cost: 1, bad: true},
		{name: "denied without a state for a cost that fits", raw: "0 " + at, cost: 1, bad: true},
		{name: "admitted with old state", raw: "1 " + at + tbState(400_000, t0f-50_000), cost: 1, bad: true},
		{name: "admitted without a state", raw: "1 " + at, cost: 1, bad: true},
		{name: "over capacity", raw: "1 " + at + tbState(600_000, t0f), cost: 1, bad: true},
		{name: "negative tokens", raw: "1 " + at + tbState(-1, t0f), cost: 1, bad: true},
		{name: "fractional tokens", raw: "1 " + at + tbState(0.5, t0f), cost: 1, bad: true},
		{name: "NaN tokens", raw: "1 " + at + tbState(math.NaN(), t0f), cost: 1, bad: true},
		{name: "time past 2^53", raw: "1 " + at + tbState(0, 1<<54), cost: 1, bad: true},
		{name: "state of 15 bytes", raw: "1 " + at + tbState(0, t0f)[:15], cost: 1, bad: true},
		{name: "state of 17 bytes", raw: "1 " + at + tbState(0, t0f) + "x", cost: 1, bad: true},
		{name: "the state alone, over capacity", raw: tbState(600_000, t0f), cost: 1, bad: true},
		{name: "the state alone, fractional", raw: tbState(0.5, t0f), cost: 1, bad: true},
		{name: "the state alone, no time", raw: tbState(0, 0), cost: 1, bad: true},
		{name: "16 bytes of text", raw: "0 1700000000 25 ", cost: 1, bad: true},
		{name: "the decimal state of the earlier script", raw: "1 400000 1700000000250000 1700000000 250000", cost: 1, bad: true},
		{name: "no time", raw: "1 0 0 " + tbState(0, t0f), cost: 1, bad: true},
		{name: "two fields", raw: "1 1700000000", cost: 1, bad: true},
		{name: "not a string", raw: "", cost: 1, bad: true},
	}
	checkReplies(t, cases, func(raw any, cost int64) (Decision, error) {
		if raw == "" {
			raw = []any{int64(1)}
		}
		return tb.decode(raw, cost*tb.unit)
	})
}

// TestFixedWindowReplies decodes replies of scripts/fixed_window.lua at L = 5 per second: a
// window's first call replies "<count> <s> <µs>" (t0), the others the count as an integer, which
// the cases write as "int N".
func TestFixedWindowReplies(t *testing.T) {
	f := &fixedWindowLimiter{limit: 5, windowUs: 1_000_000}
	cases := []replyCase{
		{name: "first", raw: "1 1700000000 250000", cost: 1, want: server(true, 4, 0)},
		{name: "first of cost 3", raw: "3 1700000000 250000", cost: 3, want: server(true, 2, 0)},
		{name: "first, cost above the limit", raw: "6 1700000000 250000", cost: 6, want: server(false, 5, 0)},
		{name: "second", raw: "int 2", cost: 1, want: Decision{Allowed: true, Remaining: 3}},
		{name: "the fifth", raw: "int 5", cost: 1, want: Decision{Allowed: true}},
		{name: "cost 2", raw: "int 3", cost: 2, want: Decision{Allowed: true, Remaining: 2}},
		{name: "denied, full", raw: "int 6", cost: 1, want: Decision{}},
		{name: "denied, full with earlier denials", raw: "int 9", cost: 1, want: Decision{}},
		{name: "denied, 2 left for a cost of 3", raw: "int 6", cost: 3, want: Decision{Remaining: 2}},
		{name: "a first call's count without a time", raw: "int 1", cost: 1, bad: true},
		{name: "a count below its cost", raw: "int 1", cost: 2, bad: true},
		{name: "a later call's count with a time", raw: "2 1700000000 250000", cost: 1, bad: true},
		{name: "a first call counted below its cost", raw: "1 1700000000 250000", cost: 2, bad: true},
		{name: "no time", raw: "1 0 0", cost: 1, bad: true},
		{name: "µs past a second", raw: "1 1700000000 1000000", cost: 1, bad: true},
		{name: "the earlier script's reply", raw: "1 1 1700000000 1700000000 250000", cost: 1, bad: true},
		{name: "negative", raw: "-1 1700000000 250000", cost: 1, bad: true},
		{name: "a negative integer", raw: "int -1", cost: 1, bad: true},
	}
	checkReplies(t, cases, func(raw any, cost int64) (Decision, error) {
		if s, ok := raw.(string); ok && strings.HasPrefix(s, "int ") {
			n, err := strconv.ParseInt(s[4:], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			raw = n
		}
		return f.decode(raw, cost, 0)
	})
}

// TestSlidingLogReplies decodes replies of scripts/sliding_log.lua at L = 5 per second: t0 is
// 1700000000250000 µs.
func TestSlidingLogReplies(t *testing.T) {
	s := &slidingLogLimiter{limit: 5, windowUs: 1_000_000}
	cases := []replyCase{
		{name: "first", raw: "1 1 1700000000 250000", cost: 1, want: server(true, 4, 0)},
		{name: "the fifth", raw: "1 5 1700000000 250000", cost: 1, want: server(true, 0, 0)},
		{name: "pushed past L before the trim", raw: "1 6 1700000000 250000", cost: 1, want: server(true, 0, 0)},
		{name: "cost 3", raw: "1 3 1700000000 250000", cost: 3, want: server(true, 2, 0)},
		{name: "denied by an entry 200 ms old", raw: "0 1700000000050000 1700000000 250000", cost: 1, want: server(false, 0, 800*time.Millisecond)},
		{name: "denied by an entry of this µs", raw: "0 1700000000250000 1700000000 250000", cost: 2, want: server(false, 0, time.Second)},
		{name: "denied by an entry ahead (clock stepped back)", raw: "0 1700000000300000 1700000000 250000", cost: 1, want: server(false, 0, 1050*time.Millisecond)},
		{name: "denied, cost above the limit", raw: "0 0 1700000000 250000", cost: 6, want: server(false, 0, 0)},
		{name: "denied by an entry that had left", raw: "0 1699999999250000 1700000000 250000", cost: 1, bad: true},
		{name: "denied with 0 for a cost that fits", raw: "0 0 1700000000 250000", cost: 1, bad: true},
		{name: "admitted below its cost", raw: "1 1 1700000000 250000", cost: 2, bad: true},
		{name: "admitted past L + cost", raw: "1 7 1700000000 250000", cost: 1, bad: true},
		{name: "admitted with cost above the limit", raw: "1 6 1700000000 250000", cost: 6, bad: true},
		{name: "allowed 2", raw: "2 1 1700000000 250000", cost: 1, bad: true},
		{name: "no time", raw: "1 1 0 0", cost: 1, bad: true},
		{name: "table", raw: "1 4 0 1700000000250000 1", cost: 1, bad: true},
	}
	checkReplies(t, cases, s.decode)
}

// TestResourceConsumerReplies decodes replies of scripts/resource_consumer.lua at Lr = 5, Lc = 3
// per second: t0 is 1700000000250000 µs.
func TestResourceConsumerReplies(t *testing.T) {
	r := &twoListLimiter{rlimit: 5, climit: 3, windowUs: 1_000_000}
	cases := []replyCase{
		{name: "first", raw: "1 1 1 1700000000 250000", cost: 1, want: server(true, 2, 0)},
		{name: "the consumer's third", raw: "1 4 3 1700000000 250000", cost: 1, want: server(true, 0, 0)},
		{name: "the resource tighter", raw: "1 4 1 1700000000 250000", cost: 1, want: server(true, 1, 0)},
		{name: "pushed past both before the trims", raw: "1 6 4 1700000000 250000", cost: 1, want: server(true, 0, 0)},
		{name: "cost 2", raw: "1 2 2 1700000000 250000", cost: 2, want: server(true, 1, 0)},
		{name: "denied by the resource", raw: "0 1700000000050000 0 1700000000 250000", cost: 1, want: server(false, 0, 800*time.Millisecond)},
		{name: "denied by the consumer", raw: "0 0 1700000000150000 1700000000 250000", cost: 1, want: server(false, 0, 900*time.Millisecond)},
		{name: "denied by both: the later leaves last", raw: "0 1700000000150000 1700000000050000 1700000000 250000", cost: 1, want: server(false, 0, 900*time.Millisecond)},
		{name: "denied, cost above the consumer limit", raw: "0 0 0 1700000000 250000", cost: 4, want: server(false, 0, 0)},
		{name: "denied by nothing", raw: "0 0 0 1700000000 250000", cost: 1, bad: true},
		{name: "denied by an entry that had left", raw: "0 1699999999250000 0 1700000000 250000", cost: 1, bad: true},
		{name: "one of two entries had left", raw: "0 1700000000150000 1699999999000000 1700000000 250000", cost: 1, bad: true},
		{name: "admitted past the consumer's limit + cost", raw: "1 1 5 1700000000 250000", cost: 1, bad: true},
		{name: "admitted below its cost", raw: "1 1 1 1700000000 250000", cost: 2, bad: true},
		{name: "admitted with a cost above a limit", raw: "1 4 4 1700000000 250000", cost: 4, bad: true},
		{name: "four fields", raw: "1 1 1700000000 250000", cost: 1, bad: true},
	}
	checkReplies(t, cases, r.decode)
}

// TestSlidingCounterReplies decodes replies of scripts/sliding_counter.lua at L = 4 per second
// for a request sent for window k = 1700000000 with W − e = 750 ms left, as the limiter estimated
// it: t0 is 250 ms into the window, so the previous window's permits weigh 3/4, on the server's
// time (replies that carry it) and on the estimate (the three-field replies, when both counters
// existed).
func TestSlidingCounterReplies(t *testing.T) {
	s := &slidingCounterLimiter{limit: 4, windowUs: 1_000_000}
	const k, left = 1_700_000_000, 750_000
	noTime := func(d Decision) Decision { d.TimeMicros, d.Clock = 0, 0; return d }
	cases := []replyCase{
		{name: "first", raw: "1700000000250000", cost: 1, want: server(true, 3, 0)},
		{name: "first, cost 2", raw: "1700000000250000", cost: 2, want: server(true, 2, 0)},
		{name: "first with a previous window", raw: "1 0 2 1700000000250000", cost: 1, want: server(true, 1, 0)},
		{name: "under the previous window's weight", raw: "1 1 2 1700000000250000", cost: 1, want: server(true, 0, 0)},
		{name: "cost 2", raw: "1 0 0 1700000000250000", cost: 2, want: server(true, 2, 0)},
		// 4·750000 + 2·10^6 > 4·10^6: wait until 4·(10^6 − e) <= (4 − 1 − 1)·10^6, e = 500000.
		{name: "denied by the previous window", raw: "0 1 4 1700000000250000", cost: 1, want: server(false, 0, 250*time.Millisecond)},
		{name: "at the previous window's weight exactly", raw: "1 0 4 1700000000250000", cost: 1, want: server(true, 0, 0)},
		// cur 2, prev 4: 3·10^6 + 3·10^6 > 4·10^6; 2 + 1 <= 4, so in this window when
		// 4·(10^6 − e) <= (4 − 2 − 1)·10^6: e >= 750000, 500 ms from now.
		{name: "denied, room later in this window", raw: "0 2 4 1700000000250000", cost: 1, want: server(false, 0, 500*time.Millisecond)},
		// cur 4: the next window, where 4·(10^6 − e'') <= 3·10^6: e'' >= 250000.
		{name: "denied, full: the next window", raw: "0 4 0 1700000000250000", cost: 1, want: server(false, 0, time.Second)},
		{name: "denied, cost above the limit", raw: "0 0 0 1700000000250000", cost: 5, want: server(false, 4, 0)},
		{name: "missed the window", raw: "2 0 0 1700000001250000", cost: 1, want: Decision{TimeMicros: t0 + 1_000_000, Clock: ClockServer}},
		// Both counters existed: decided on the estimate, with no time.
		{name: "kept: under the previous window's weight", raw: "1 1 2", cost: 1, want: noTime(server(true, 0, 0))},
		{name: "kept: denied, room later in this window", raw: "0 2 4", cost: 1, want: noTime(server(false, 0, 500*time.Millisecond))},
		{name: "kept: denied, full", raw: "0 4 1", cost: 1, want: noTime(server(false, 0, time.Second))},
		{name: "kept: admitted past the estimate", raw: "1 1 4", cost: 1, bad: true},
		{name: "kept: denied within the estimate", raw: "0 1 1", cost: 1, bad: true},
		{name: "kept: missed", raw: "2 1 1", cost: 1, bad: true},
		{name: "kept: counter past the limit", raw: "0 5 1", cost: 1, bad: true},
		{name: "first, cost above the limit", raw: "1700000000250000", cost: 5, bad: true},
		{name: "first at a time in another window", raw: "1700000001250000", cost: 1, bad: true},
		{name: "first at time 0", raw: "0", cost: 1, bad: true},
		{name: "missed at a time inside the window", raw: "2 0 0 1700000000250000", cost: 1, bad: true},
		{name: "decided at a time in another window", raw: "1 0 0 1700000001250000", cost: 1, bad: true},
		{name: "admitted past the estimate", raw: "1 1 4 1700000000250000", cost: 1, bad: true},
		{name: "denied within the estimate", raw: "0 0 0 1700000000250000", cost: 1, bad: true},
		{name: "counter past the limit", raw: "0 5 0 1700000000250000", cost: 1, bad: true},
		{name: "allowed 3", raw: "3 0 0 1700000000250000", cost: 1, bad: true},
		{name: "two fields", raw: "1 1700000000250000", cost: 1, bad: true},
		{name: "five fields", raw: "1 0 0 1700000000 250000", cost: 1, bad: true},
	}
	checkReplies(t, cases, func(raw any, cost int64) (Decision, error) {
		d, _, err := s.decode(raw, k, left, cost)
		return d, err
	})
}
