package redisenv_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// TestAutoPicksContainer hides redis-server (PATH is an empty directory) and checks that auto
// runs a container when an engine answers and the image is present locally.
func TestAutoPicksContainer(t *testing.T) {
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tag, err := redisenv.BuildHostImage(ctx, t.Logf) // while redis-server is still on PATH
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	target := startT(t, redisenv.Config{Image: tag})
	if target.Info.Backend != redisenv.BackendContainer || target.Info.Image != tag ||
		!strings.Contains(target.Info.Chosen, "redis-server is not on PATH") {
		t.Errorf("auto without redis-server: Backend %q, Image %q, Chosen %q; want container with image %s because redis-server is not on PATH",
			target.Info.Backend, target.Info.Image, target.Info.Chosen, tag)
	}
	checkSingle(t, target)
}

// TestAutoNothingToRun checks auto's error when redis-server is not on PATH and no container can
// be used: it says how to install either, and never suggests pulling the "host" image.
func TestAutoNothingToRun(t *testing.T) {
	deadEngine := "unix://" + filepath.Join(t.TempDir(), "no-engine.sock")
	tests := []struct {
		name       string
		dockerHost string // "" keeps the caller's engine (the case skips when none answers)
		image      string
		want       []string
		notWant    []string
	}{
		{"no engine", deadEngine, "", []string{"install redis-server", "no Docker engine answers"}, nil},
		{"image not present", "", "limitbench/absent-image:never",
			[]string{"install redis-server", "limitbench/absent-image:never is not present locally", "docker pull limitbench/absent-image:never"}, nil},
		{"image host", "", redisenv.HostImage,
			[]string{"install redis-server", "make redis-image", "--image host"}, []string{"docker pull"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dockerHost == "" {
				needEngine(t)
			} else {
				t.Setenv("DOCKER_HOST", tt.dockerHost)
			}
			t.Setenv("PATH", t.TempDir())
			target, err := redisenv.Start(context.Background(), redisenv.Config{Image: tt.image})
			if err == nil {
				_ = target.Stop(context.Background())
				t.Fatalf("auto without redis-server started %s %q", target.Info.Backend, target.Info.Chosen)
			}
			if !errors.Is(err, redisenv.ErrUnavailable) {
				t.Errorf("Start = %v, want ErrUnavailable", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Start = %v\nwant it to say %q", err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("Start = %v\nwant it not to say %q", err, w)
				}
			}
		})
	}
}
