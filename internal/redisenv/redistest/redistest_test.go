package redistest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestSinglePrefixes(t *testing.T) {
	a, b := redistest.Single(t), redistest.Single(t)
	if a.Target != b.Target {
		t.Errorf("Single started two servers, want one shared")
	}
	if a.Prefix == b.Prefix || !strings.HasPrefix(a.Prefix, "t") || !strings.HasSuffix(a.Prefix, ":") {
		t.Errorf("prefixes %q, %q: want distinct t<N>:", a.Prefix, b.Prefix)
	}
	if err := a.Target.Client.Set(context.Background(), a.Prefix+"k", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestCluster(t *testing.T) {
	e := redistest.Cluster(t)
	if got := len(e.Target.Masters()); got != 3 {
		t.Fatalf("Masters = %d, want 3", got)
	}
	ctx := context.Background()
	if err := e.Target.Client.Set(ctx, "{"+e.Prefix+"x}:a", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
}
