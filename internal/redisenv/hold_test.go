package redisenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
)

// TestHold: Hold returns nil when its context ends while every master answers, and an error once a
// master has not answered the given number of checks in a row.
func TestHold(t *testing.T) {
	needRedisServer(t)
	target := startT(t, redisenv.Config{Backend: redisenv.BackendProcess})

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := target.Hold(ctx, 20*time.Millisecond, 3); err != nil {
		t.Fatalf("Hold on a live environment = %v; want nil when the context ends", err)
	}

	lost := make(chan error, 1)
	go func() { lost <- target.Hold(context.Background(), 20*time.Millisecond, 3) }()
	if err := target.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		if err == nil || !strings.Contains(err.Error(), "environment lost") {
			t.Errorf("Hold after Stop = %v; want an error saying the environment was lost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Hold did not return within 10s of the environment stopping")
	}
}
