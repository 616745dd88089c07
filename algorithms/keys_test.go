package algorithms

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestCheckPrefixAndSubject(t *testing.T) {
	prefixes := []struct {
		prefix string
		ok     bool
	}{
		{"", true},
		{"limitbench:run-1:gcra:0:", true},
		{"t12:", true},
		{"lb:{run}:", false}, // would become every subject's hash tag
		{"lb:{run:", false},  // would take the subject into a longer tag
		{"lb:}:", false},
	}
	for _, tt := range prefixes {
		err := CheckPrefix(tt.prefix)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadKey)) {
			t.Errorf("CheckPrefix(%q) = %v; want ok %v (ErrBadKey otherwise)", tt.prefix, err, tt.ok)
		}
	}
	subjects := []struct {
		subject string
		ok      bool
	}{
		{"user-1", true},
		{"10.0.0.1", true},
		{"a{b", true}, // the tag is "a{b", the same for every key of the subject
		{"{x", true},
		{"", false},    // "{}": Redis hashes the whole key
		{"}x", false},  // "{}x}": the same
		{"a}b", false}, // the tag would be "a"
	}
	for _, tt := range subjects {
		err := CheckSubject(tt.subject)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadKey)) {
			t.Errorf("CheckSubject(%q) = %v; want ok %v (ErrBadKey otherwise)", tt.subject, err, tt.ok)
		}
	}
}

// TestBadKeys: every built-in algorithm, and the reference, refuses at Prepare a prefix with a
// brace and in Do an empty subject or one with '}', with ErrBadKey and no admission; a subject
// with '{' keeps all its keys in one slot, so even multi-key algorithms work with it on a cluster.
func TestBadKeys(t *testing.T) {
	l := Limit{Limit: 5, Window: time.Second}
	algs := append(All(), Reference())
	topologies(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := env.Target.Client
		for _, a := range algs {
			name := a.Describe().Name
			if _, err := a.Prepare(ctx, c, l, env.Prefix+"{x}:"); !errors.Is(err, ErrBadKey) {
				t.Errorf("%s: Prepare with prefix %q: %v; want ErrBadKey", name, env.Prefix+"{x}:", err)
			}
			lim := prepare(t, env, a, l)
			for _, subject := range []string{"", "}x", "a}b"} {
				d, err := Do(ctx, lim, c, Request{Subject: subject, Client: "c", Cost: 1, ClientTime: base, FixedTime: base})()
				if !errors.Is(err, ErrBadKey) || d.Allowed {
					t.Errorf("%s: subject %q: %+v, %v; want ErrBadKey and no admission", name, subject, d, err)
				}
			}
			for _, subject := range []string{"a{b", "{x"} {
				req := Request{Subject: subject, Client: "c", Cost: 1, ClientTime: base, FixedTime: base}
				if d, err := Do(ctx, lim, c, req)(); err != nil || !d.Allowed {
					t.Errorf("%s: subject %q (keys %q): %+v, %v; want allowed", name, subject, lim.Keys(req), d, err)
				}
			}
		}
	})
}
