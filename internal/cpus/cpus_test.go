package cpus

import (
	"testing"

	"github.com/limitbench/limitbench/internal/redisenv"
)

func TestLocalServers(t *testing.T) {
	single := []redisenv.Topology{redisenv.TopologySingle}
	both := []redisenv.Topology{redisenv.TopologySingle, redisenv.TopologyCluster}
	tests := []struct {
		name string
		cfg  redisenv.Config
		tops []redisenv.Topology
		want int
	}{
		{"external", redisenv.Config{Backend: redisenv.BackendExternal}, both, 0},
		{"single process", redisenv.Config{Backend: redisenv.BackendProcess}, single, 1},
		{"auto, no topology", redisenv.Config{Backend: redisenv.BackendAuto}, nil, 1},
		{"default cluster", redisenv.Config{Backend: redisenv.BackendProcess}, both, 3},
		{"sentinel, default replica", redisenv.Config{Backend: redisenv.BackendProcess}, []redisenv.Topology{redisenv.TopologySentinel}, 2},
		{"sentinel, 3 replicas", redisenv.Config{Backend: redisenv.BackendContainer, Replicas: 3}, []redisenv.Topology{redisenv.TopologySentinel}, 4},
		{"sentinel and default cluster", redisenv.Config{Backend: redisenv.BackendProcess}, []redisenv.Topology{redisenv.TopologySentinel, redisenv.TopologyCluster}, 3},
		{"5 masters, 1 replica each", redisenv.Config{Backend: redisenv.BackendContainer, Masters: 5, Replicas: 1}, both, 10},
	}
	for _, tt := range tests {
		if got := localServers(tt.cfg, tt.tops); got != tt.want {
			t.Errorf("%s: localServers = %d; want %d", tt.name, got, tt.want)
		}
	}
}

func TestGeneratorProcs(t *testing.T) {
	tests := []struct {
		cpus, servers, want int
		note                bool
	}{
		{2, 0, 0, false}, // external: Go's default
		{2, 1, 1, true},
		{2, 3, 1, true}, // never below one
		{16, 1, 15, true},
		{16, 3, 13, true},
	}
	for _, tt := range tests {
		got, note := generatorProcs(tt.cpus, tt.servers)
		if got != tt.want || (note != "") != tt.note {
			t.Errorf("generatorProcs(%d, %d) = (%d, %q); want %d, note %v", tt.cpus, tt.servers, got, note, tt.want, tt.note)
		}
	}
}
