package clock

import (
	"context"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestMeasure(t *testing.T) {
	env := redistest.Single(t)
	off, err := Measure(context.Background(), env.Target.Client, 8)
	if err != nil {
		t.Fatalf("Measure: %v", err)
	}
	if off.Err <= 0 || off.Err > time.Second {
		t.Errorf("Err = %s; want a small positive error", off.Err)
	}
	// The server shares this machine's clock: the offset is zero within the error (TIME is
	// truncated to a microsecond, hence the extra µs).
	if d := off.Offset; d < -off.Err-time.Microsecond || d > off.Err+time.Microsecond {
		t.Errorf("Offset = %s ± %s; want 0 within the error on a shared clock", off.Offset, off.Err)
	}
}
