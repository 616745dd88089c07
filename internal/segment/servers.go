package segment

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/result"
)

// Servers returns the identity of the Redis tgt reaches, for a segment's result: every master's
// address and run_id (INFO server), in address order. Segments that share one Redis record the
// same run ids; Merge refuses segments that do not (a private server each, or two Redises).
func Servers(ctx context.Context, tgt *redisenv.Target) ([]result.SegmentServer, error) {
	infos, err := tgt.InfoAll(ctx, "server")
	if err != nil {
		return nil, err
	}
	var out []result.SegmentServer
	for _, addr := range slices.Sorted(maps.Keys(infos)) {
		id := ""
		for line := range strings.SplitSeq(infos[addr], "\n") {
			if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "run_id:"); ok {
				id = v
			}
		}
		if id == "" {
			return nil, fmt.Errorf("%s: INFO server has no run_id", addr)
		}
		out = append(out, result.SegmentServer{Addr: addr, RunID: id})
	}
	return out, nil
}

// sameServers reports whether two segments measured one Redis: their masters' run ids are the
// same set (addresses may differ: each generator reaches the server by its own route). A result
// without servers (written before they were recorded) is taken as the same.
func sameServers(a, b []result.SegmentServer) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	ids := func(ss []result.SegmentServer) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = s.RunID
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(ids(a), ids(b))
}

// describeServers names servers in a message: "127.0.0.1:7000 (run id 4f2a1b2c)", joined.
func describeServers(ss []result.SegmentServer) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		id := s.RunID
		if len(id) > 8 {
			id = id[:8]
		}
		parts[i] = s.Addr + " (run id " + id + ")"
	}
	return strings.Join(parts, ", ")
}
