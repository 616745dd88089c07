package measure

import (
	"testing"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
)

// TestMain shares one single-node Redis and one 3-master cluster between the package's tests
// that use redistest.
func TestMain(m *testing.M) { redistest.Main(m) }
